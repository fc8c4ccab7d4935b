//! Prints, for each capture named on the command line, its format, packet
//! count and bytes read, and the error that stopped it (if any).
//!
//! `cargo run -p sluice-capture --example summary -- FILE...`

use sluice_capture::CaptureReader;

fn main() {
    for path in std::env::args().skip(1) {
        let mut r = match CaptureReader::open(&path) {
            Ok(r) => r,
            Err(e) => {
                println!("{path}: refused: {e}");
                continue;
            }
        };
        let mut bytes = 0u64;
        let end = loop {
            match r.next_packet() {
                Ok(Some(p)) => bytes += p.data.len() as u64,
                Ok(None) => break String::from("end of capture"),
                Err(e) => break format!("stopped: {e}"),
            }
        };
        println!(
            "{path}: {}{}, {} packets, {bytes} packet bytes, {} stream bytes; {end}",
            r.format(),
            if r.compressed() { " (gzip)" } else { "" },
            r.packets_read(),
            r.offset(),
        );
    }
}
