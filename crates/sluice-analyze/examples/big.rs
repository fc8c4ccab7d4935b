use std::collections::HashSet;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let mut keys = Vec::new();
    let t = std::time::Instant::now();
    let mut r = sluice_capture::CaptureReader::open(&a[1]).unwrap();
    while let Some(p) = r.next_packet().unwrap() { keys.push(sluice_analyze::frame_key(p.data)); }
    eprintln!("hash {:?}", t.elapsed());
    let t = std::time::Instant::now();
    let s: HashSet<u64> = keys.iter().copied().collect();
    eprintln!("set {:?} distinct {}", t.elapsed(), s.len());
    let mut low: HashSet<u64> = HashSet::new();
    for k in &keys { low.insert(k & 0xfffff); }
    eprintln!("distinct low20 {}", low.len());
}
