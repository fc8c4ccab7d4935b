use super::*;

const S: u64 = 1_000_000_000;

fn real(t: &Timeline, d: u64) -> Option<u64> {
    t.real_of(d, &mut 0)
}

#[test]
fn scale_one_is_the_plan_itself() {
    let t = Timeline::constant(1.0);
    for d in [0, 1, 999, 123_456_789_012, (1 << 51) + 7] {
        assert_eq!(real(&t, d), Some(d));
    }
}

#[test]
fn a_step_moves_only_what_is_due_after_it() {
    let mut t = Timeline::constant(1.0);
    t.change(S, Change::Scale(2.0)).unwrap();
    assert_eq!(real(&t, S / 2), Some(S / 2));
    assert_eq!(real(&t, S), Some(S));
    assert_eq!(real(&t, S + S / 2), Some(S + S / 4));
    assert_eq!(real(&t, 3 * S), Some(2 * S));
    assert_eq!(t.scale_at(S - 1), 1.0);
    assert_eq!(t.scale_at(S), 2.0);
}

#[test]
fn a_ramp_from_zero_follows_the_integral() {
    // s(t) = t / 1 s, so D(t) = t² / 2 s.
    let t = Timeline::from_points(&[(0, 0.0), (S, 1.0)]).unwrap();
    assert_eq!(real(&t, 0), Some(0));
    assert_eq!(real(&t, S / 2), Some(S));
    assert_eq!(real(&t, S / 8), Some(S / 2));
    // After the ramp the scale holds at 1.
    assert_eq!(real(&t, S / 2 + S), Some(2 * S));
    assert!((t.nominal_at(S / 2) - (S / 8) as f64).abs() < 1.0);
    assert!((t.scale_at(S / 4) - 0.25).abs() < 1e-12);
}

#[test]
fn a_pause_holds_everything_planned_after_it_until_the_resume() {
    let mut t = Timeline::constant(1.0);
    t.change(S, Change::Pause).unwrap();
    assert!(t.paused());
    assert_eq!(real(&t, S), Some(S), "due at the pause: leaves at it");
    assert_eq!(real(&t, S + 1), None, "paused: never, yet");
    // A rate set while paused is the one resumed to.
    t.change(2 * S, Change::Scale(4.0)).unwrap();
    assert_eq!(real(&t, S + 1), None);
    t.change(3 * S, Change::Resume).unwrap();
    assert!(!t.paused());
    assert_eq!(real(&t, S + 4), Some(3 * S + 1));
    assert_eq!(real(&t, 2 * S), Some(3 * S + S / 4));
}

#[test]
fn a_change_replaces_what_was_planned_after_it() {
    let mut t = Timeline::from_points(&[(0, 1.0), (10 * S, 3.0)]).unwrap();
    t.change(2 * S, Change::Scale(0.5)).unwrap();
    assert_eq!(t.scale_at(5 * S), 0.5);
    assert_eq!(t.scale_at(20 * S), 0.5);
    // The ramp's first 2 s still happened: s = 1 + t/5 s.
    let reached = 2.4 * S as f64;
    assert!((t.nominal_at(2 * S) - reached).abs() < 1.0);
}

#[test]
fn steps_in_points_are_two_points_at_one_instant() {
    let a = Timeline::from_points(&[(0, 1.0), (S, 1.0), (S, 2.0)]).unwrap();
    let mut b = Timeline::constant(1.0);
    b.change(S, Change::Scale(2.0)).unwrap();
    for d in [0, S / 3, S, S + 17, 5 * S] {
        assert_eq!(real(&a, d), real(&b, d), "at {d}");
    }
    // A first point after 0: its scale holds before it.
    let c = Timeline::from_points(&[(S, 2.0)]).unwrap();
    assert_eq!(real(&c, 4 * S), Some(2 * S));
}

#[test]
fn due_times_never_go_back_and_land_where_d_is_reached() {
    let mut t = Timeline::constant(1.0);
    t.change(
        S,
        Change::Ramp {
            to: 3.0,
            over: 2 * S,
        },
    )
    .unwrap();
    t.change(2 * S, Change::Pause).unwrap();
    t.change(2 * S + S / 2, Change::Resume).unwrap();
    t.change(
        4 * S,
        Change::Points(vec![(0, 0.5), (S, 0.0), (2 * S, 2.0)]),
    )
    .unwrap();
    let mut hint = 0;
    let mut last = 0;
    let mut d = 0;
    while d < 20 * S {
        let r = t.real_of(d, &mut hint).expect("reached");
        assert!(r >= last, "{d}: {r} < {last}");
        assert_eq!(Some(r), real(&t, d), "the hint changes nothing at {d}");
        // D at the due time is d (within rounding to whole ns × scale).
        let reached = t.nominal_at(r);
        assert!((reached - d as f64).abs() <= 4.0, "{d}: D({r}) = {reached}");
        last = r;
        d += 7_777_777;
    }
}

#[test]
fn bad_changes_are_refused() {
    let mut t = Timeline::constant(1.0);
    assert_eq!(
        t.change(0, Change::Scale(-1.0)),
        Err(ChangeError::BadScale(-1.0))
    );
    assert!(t.change(0, Change::Scale(f64::NAN)).is_err());
    assert_eq!(
        t.change(0, Change::Points(vec![(5, 1.0), (4, 1.0)])),
        Err(ChangeError::Backwards(4, 5))
    );
    assert_eq!(t.change(0, Change::Points(vec![])), Err(ChangeError::Empty));
    t.change(0, Change::Pause).unwrap();
    assert_eq!(
        t.change(0, Change::Ramp { to: 1.0, over: 1 }),
        Err(ChangeError::Paused)
    );
    // What was refused changed nothing.
    t.change(S, Change::Resume).unwrap();
    assert_eq!(real(&t, 5), Some(S + 5));
}

#[test]
fn forgotten_pieces_leave_later_due_times_alone() {
    let mut t = Timeline::constant(1.0);
    for k in 1..=1000u64 {
        t.change(k * S / 1000, Change::Scale(1.0 + (k % 3) as f64))
            .unwrap();
    }
    let full = t.clone();
    t.forget_before(S / 2);
    assert!(t.piece_count() <= 502, "{}", t.piece_count());
    for d in [S, 2 * S, 3 * S + 17] {
        assert_eq!(real(&t, d), real(&full, d), "at {d}");
    }
    // Long overdue: due at once, where the timeline now starts.
    assert!(real(&t, 0).unwrap() <= S / 2);
}
