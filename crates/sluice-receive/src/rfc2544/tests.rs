//! Results that cannot mislead (a sender that fell short is marked on
//! every trial, and a bound the sender set is named as the sender's), and
//! the searches against a device whose limits are known.

use super::*;
use std::cell::RefCell;

/// A trial at `pps` asked whose sender reached `sent_pps`, losing
/// `lost` of 1000 frames, judged as `Runner::trial` judges.
fn trial(pps: f64, sent_pps: f64, lost: u64, tolerance: f64) -> Trial {
    let stream = StreamReport {
        received: 1000 - lost,
        lost,
        ..StreamReport::default()
    };
    Trial::timed(
        Sent {
            frames: 1000,
            pps: Some(sent_pps),
            streams: &[stream],
        },
        pps,
        tolerance,
    )
}

fn size(max: f64, max_from: MaxFrom, throughput: Option<Throughput>) -> SizeResult {
    SizeResult {
        size: 64,
        imix: false,
        mean_size: 64.0,
        max_pps: max,
        max_from,
        throughput,
        latency: None,
        loss: Vec::new(),
        back_to_back: None,
    }
}

fn search(trials: Vec<Trial>, max_from: MaxFrom) -> Throughput {
    let best = trials
        .iter()
        .filter(|t| t.pass)
        .map(|t| t.pps)
        .max_by(f64::total_cmp);
    Throughput {
        pps: best,
        bps: best.map(|p| p * 480.0),
        l1_bps: best.map(|p| p * 672.0),
        converged: true,
        limit: limit_of(&trials, best, max_from, 0.0),
        trials,
    }
}

/// The audit's case: 100 % of 48 446 frames/s asked, 17 117 reached,
/// nothing lost. The row must not read as the device's loss at 100 %.
#[test]
fn a_loss_row_whose_sender_fell_short_is_marked_with_the_rate_reached() {
    let max = 48_446.0;
    let mut r = size(max, MaxFrom::TopSpeed, None);
    r.loss = vec![
        loss_row(100, max, trial(max, 17_117.0, 0, 0.0)),
        loss_row(90, max, trial(0.9 * max, 0.9 * max, 0, 0.0)),
    ];
    let row = &r.loss[0];
    assert!(row.sender_short);
    let got = row.achieved_percent.unwrap();
    assert!((got - 35.33).abs() < 0.01, "{got}");
    assert!(!r.loss[1].sender_short);
    let text = render(&r);
    let first = text.lines().nth(1).unwrap();
    assert!(
        first.contains("frame loss at 100 %")
            && first.contains("SENDER SHORT")
            && first.contains("17117 frames/s (35.3 %)"),
        "{text}"
    );
    let second = text.lines().nth(2).unwrap();
    assert!(!second.contains("SENDER"), "{text}");
    assert!(
        text.contains("the sender, not the device, fell short in 1 of 2 loss trials"),
        "{text}"
    );
    // The JSON carries the mark on the row and the trial.
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["loss"][0]["sender_short"], true, "{v}");
    assert_eq!(v["loss"][0]["trial"]["sender_short"], true, "{v}");
    assert_eq!(v["loss"][0]["trial"]["sent_pps"], 17_117.0, "{v}");
    assert_eq!(v["loss"][1]["sender_short"], false, "{v}");
    assert_eq!(v["max_from"], "top_speed", "{v}");
}

/// A search bounded by trials the sender could not send is the
/// sender's limit, said in the text and the JSON; one bounded by loss
/// is the device's; a top that passed is the top's.
#[test]
fn a_throughput_the_sender_bounded_says_so() {
    let max = 48_446.0;
    // Top and half fell short with nothing lost; a quarter passed.
    let t = search(
        vec![
            trial(max, 17_117.0, 0, 0.0),
            trial(max / 2.0, 17_050.0, 0, 0.0),
            trial(max / 4.0, max / 4.0, 0, 0.0),
        ],
        MaxFrom::TopSpeed,
    );
    assert_eq!(t.limit, Limit::Sender);
    let r = size(max, MaxFrom::TopSpeed, Some(t));
    let text = render(&r);
    assert!(
        text.contains("LIMITED BY THE SENDER, not the device")
            && text.contains("at 24223 frames/s asked the sender reached only 17050"),
        "{text}"
    );
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["throughput"]["limit"], "sender", "{v}");

    // The top failed by loss: the device's limit, nothing said.
    let t = search(
        vec![
            trial(max, max, 50, 0.0),
            trial(max / 2.0, max / 2.0, 0, 0.0),
        ],
        MaxFrom::TopSpeed,
    );
    assert_eq!(t.limit, Limit::Device);
    let text = render(&size(max, MaxFrom::TopSpeed, Some(t)));
    assert!(!text.contains("LIMITED") && !text.contains("top"), "{text}");

    // The sender short *and* the device losing more than allowed:
    // the device's.
    let t = search(
        vec![
            trial(max, 17_000.0, 50, 0.0),
            trial(max / 2.0, max / 2.0, 0, 0.0),
        ],
        MaxFrom::TopSpeed,
    );
    assert_eq!(t.limit, Limit::Device);

    // The top passed: the sender's top speed, or --max-pps.
    let t = search(vec![trial(max, max, 0, 0.0)], MaxFrom::TopSpeed);
    assert_eq!(t.limit, Limit::Sender);
    let text = render(&size(max, MaxFrom::TopSpeed, Some(t)));
    assert!(
        text.contains("the search's top, 48446 frames/s, is the sender's top speed"),
        "{text}"
    );
    let t = search(vec![trial(max, max, 0, 0.0)], MaxFrom::MaxPps);
    assert_eq!(t.limit, Limit::MaxPps);
    let text = render(&size(max, MaxFrom::MaxPps, Some(t)));
    assert!(text.contains("--max-pps 48446 frames/s, passed"), "{text}");

    // No rate passed, every trial short with nothing lost.
    let t = search(
        vec![trial(max, 900.0, 0, 0.0), trial(max / 2.0, 900.0, 0, 0.0)],
        MaxFrom::MaxPps,
    );
    assert_eq!((t.pps, t.limit), (None, Limit::Sender));
}

/// A trial's own line names the rate reached; a burst, the frames.
#[test]
fn each_short_trial_line_shows_asked_and_reached() {
    let t = trial(48_446.0, 17_117.0, 0, 0.0);
    assert_eq!(
        short_note(&t),
        ", the sender fell short: 17117 of 48446 frames/s reached"
    );
    let mut b = trial(0.0, 1e6, 0, 0.0);
    b.sender_short = true;
    b.burst = Some(2000);
    assert_eq!(
        short_note(&b),
        ", the sender fell short: 1000 of 2000 frames sent"
    );
    assert_eq!(short_note(&trial(100.0, 100.0, 0, 0.0)), "");
}

/// Only the tests that ran appear, under the size's name.
#[test]
fn no_empty_sections_in_the_text() {
    let mut r = size(1000.0, MaxFrom::MaxPps, None);
    r.size = 1518;
    r.back_to_back = Some(BackToBack {
        frames: 12.0,
        searches: vec![12],
        trials: Vec::new(),
    });
    let text = render(&r);
    assert_eq!(
        text,
        "1518 bytes:\n  back-to-back: 12.0 frames (searches [12])"
    );
}

/// A device that forwards everything up to `limit` frames/s and loses
/// a tenth above it, and a sender that reaches at most `top`; bursts are
/// clean up to `depth` frames. It keeps the rates asked, in order.
struct Device {
    limit: f64,
    top: f64,
    depth: u64,
    asked: RefCell<Vec<f64>>,
}

impl Device {
    fn new(limit: f64, top: f64, depth: u64) -> Device {
        Device {
            limit,
            top,
            depth,
            asked: RefCell::default(),
        }
    }
}

impl Trials for Device {
    type Error = String;

    fn trial(&self, pps: f64) -> Result<Trial, String> {
        self.asked.borrow_mut().push(pps);
        let reached = pps.min(self.top);
        let lost = if reached > self.limit { 100 } else { 0 };
        let stream = StreamReport {
            received: 1000 - lost,
            ..StreamReport::default()
        };
        Ok(Trial::timed(
            Sent {
                frames: 1000,
                pps: Some(reached),
                streams: &[stream],
            },
            pps,
            0.0,
        ))
    }

    fn burst(&self, frames: u64) -> Result<Trial, String> {
        let lost = frames.saturating_sub(self.depth);
        let stream = StreamReport {
            received: frames - lost,
            ..StreamReport::default()
        };
        Ok(Trial::of_burst(
            Sent {
                frames,
                pps: Some(1e6),
                streams: &[stream],
            },
            frames,
        ))
    }
}

const SEARCH: Search = Search {
    tolerance: 0.0,
    resolution: 1.0,
    max_trials: 30,
    b2b_repeats: 2,
};

#[test]
fn the_throughput_search_finds_the_devices_limit_within_its_resolution() {
    let d = Device::new(37_000.0, 1e9, 0);
    let t = throughput(&d, &SEARCH, 100_000.0, MaxFrom::MaxPps, 64.0).unwrap();
    let found = t.pps.unwrap();
    assert!((37_000.0 * 0.98..=37_000.0).contains(&found), "{found}");
    assert!(t.converged);
    assert_eq!(t.limit, Limit::Device);
    assert_eq!(t.bps, Some(found * 60.0 * 8.0));
    assert_eq!(t.l1_bps, Some(found * 84.0 * 8.0));
    // The top first, then halves: each trial between the last pass and
    // the last fail.
    let asked = d.asked.borrow();
    assert_eq!(asked[..3], [100_000.0, 50_000.0, 25_000.0]);
    assert_eq!(asked.len(), t.trials.len());
    // Its most trials end it, not converged.
    let few = Search {
        max_trials: 3,
        ..SEARCH
    };
    let t = throughput(
        &Device::new(37_000.0, 1e9, 0),
        &few,
        100_000.0,
        MaxFrom::MaxPps,
        64.0,
    )
    .unwrap();
    assert_eq!((t.trials.len(), t.converged), (3, false));
}

#[test]
fn a_search_the_sender_bounds_is_the_senders() {
    // The device takes anything; the sender reaches 20 000.
    let d = Device::new(1e9, 20_000.0, 0);
    let t = throughput(&d, &SEARCH, 100_000.0, MaxFrom::TopSpeed, 64.0).unwrap();
    assert_eq!(t.limit, Limit::Sender);
    // A trial within 1 % of its rate is not short.
    assert!(t.pps.unwrap() <= 20_000.0 / 0.99, "{:?}", t.pps);
}

#[test]
fn the_loss_table_stops_after_two_clean_steps_and_b2b_averages_its_searches() {
    let d = Device::new(65_000.0, 1e9, 0);
    let rows = loss_table(&d, 100_000.0).unwrap();
    let percents: Vec<u32> = rows.iter().map(|r| r.percent).collect();
    assert_eq!(percents, [100, 90, 80, 70, 60, 50]);
    assert!(rows[..4].iter().all(|r| r.trial.lost == 100));
    assert!(rows[4..].iter().all(|r| r.trial.lost == 0));
    let b = back_to_back(&Device::new(0.0, 0.0, 700), &SEARCH, 1000).unwrap();
    assert_eq!(b.searches.len(), 2);
    assert!(
        b.searches.iter().all(|&s| (690..=700).contains(&s)),
        "{b:?}"
    );
    assert!(b.trials.iter().all(|t| t.burst.is_some()));
}

#[test]
fn results_read_back_as_they_were_written() {
    let d = Device::new(37_000.0, 1e9, 500);
    let mut r = size(100_000.0, MaxFrom::MaxPps, None);
    r.throughput = Some(throughput(&d, &SEARCH, 100_000.0, MaxFrom::MaxPps, 64.0).unwrap());
    r.loss = loss_table(&d, 100_000.0).unwrap();
    r.back_to_back = Some(back_to_back(&d, &SEARCH, 1000).unwrap());
    let doc = Results {
        to: "afpacket:a".into(),
        rx: "b".into(),
        both: false,
        trial_s: 1.0,
        loss_tolerance_percent: 0.0,
        resolution_percent: 1.0,
        sizes: vec![r],
    };
    // Every key read back (compared as read: serde_json's fast float
    // parsing may move a float's last bit, the same way both times).
    let text = serde_json::to_string(&doc).unwrap();
    let back: Results = serde_json::from_str(&text).unwrap();
    let read: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(serde_json::to_value(&back).unwrap(), read);
    assert_eq!(
        back.sizes[0].back_to_back.as_ref().unwrap().searches,
        [500, 500]
    );
}
