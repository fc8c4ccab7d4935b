//! Compiles `proto/` with protox (pure Rust: no protoc on the machine).
//!
//! The job's messages also derive serde, with the names of
//! `sluice_job::RemoteJob`'s JSON: `jobwire` converts between the two
//! through it, so a field of one without its twin in the other is refused
//! by name (both sides deny unknown fields; a test fills every field).

/// The messages of a job (`Job` and what it holds).
const JOB_MESSAGES: [&str; 9] = [
    "Job",
    "SendOptions",
    "ReplayOptions",
    "FlowsOptions",
    "SeriesWork",
    "SeriesOptions",
    "ProfileOptions",
    "SelectOptions",
    "FrameOptions",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto");
    let file = root.join("sluice/control/v1/worker.proto");
    println!("cargo:rerun-if-changed={}", file.display());
    let fds = protox::compile([&file], [&root])?;
    let mut b = tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .enum_attribute(
            ".sluice.control.v1.Job.work",
            "#[derive(serde::Serialize, serde::Deserialize)] \
             #[serde(rename_all = \"snake_case\", deny_unknown_fields)]",
        );
    // `Job`'s `send` alone: a path to `work` also leads to the oneof's
    // variants, which take no such attribute (and a job without work is
    // refused anyway).
    let fields = JOB_MESSAGES[1..]
        .iter()
        .map(|m| format!(".sluice.control.v1.{m}"))
        .chain([".sluice.control.v1.Job.send".to_string()]);
    for path in fields {
        b = b.field_attribute(
            &path,
            "#[serde(skip_serializing_if = \"crate::jobwire::unset\")]",
        );
    }
    for m in JOB_MESSAGES {
        b = b.message_attribute(
            format!(".sluice.control.v1.{m}"),
            "#[derive(serde::Serialize, serde::Deserialize)] \
             #[serde(default, deny_unknown_fields)]",
        );
    }
    b.compile_fds(fds)?;
    Ok(())
}
