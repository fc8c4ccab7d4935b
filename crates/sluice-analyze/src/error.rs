//! Why an analysis failed: [`AnalyzeError`].
//!
//! Design decision: a capture that merely ends early is *not* an error (the
//! report carries the truncation message and covers the complete packets);
//! only captures that cannot be read at all, or are corrupt in the middle,
//! fail. Why: a generator or capture tool killed mid-write is the normal
//! end of many benchmark runs, and its packets still deserve a verdict.

use sluice_capture::CaptureError;

/// A failure to analyze a capture or its reference.
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    /// The capture or the reference cannot be opened, or is corrupt
    /// before its end (the message names the file and byte offset).
    #[error(transparent)]
    Capture(#[from] CaptureError),
    /// The reference has more packets than the matcher can index.
    #[error("{file}: reference has more than {limit} packets, the most this analyzer indexes")]
    ReferenceTooLarge {
        /// The reference file.
        file: String,
        /// [`MAX_REFERENCE_PACKETS`](crate::MAX_REFERENCE_PACKETS).
        limit: u64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_too_large_names_file_and_limit() {
        let e = AnalyzeError::ReferenceTooLarge {
            file: "big.pcap".into(),
            limit: 7,
        };
        assert_eq!(
            e.to_string(),
            "big.pcap: reference has more than 7 packets, the most this analyzer indexes"
        );
    }
}
