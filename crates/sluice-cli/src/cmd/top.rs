//! `sluice top`: a terminal console of a worker's jobs (ratatui): each
//! job's state, rate, send-time error and receive loss and latency,
//! refreshed as they run; keys pause, resume, step the rate and stop the
//! selected job.

use crate::args::TopArgs;
use crate::cmd::distributed::{control_failure, runtime};
use crate::cmd::jobs::rate_text;
use crate::{exit, Failure};
use anyhow::Context;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::terminal::{disable_raw_mode, enable_raw_mode};
use ratatui::crossterm::{execute, terminal};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Block, Paragraph, Row, Table, TableState};
use ratatui::Frame;
use sluice_control::jobs_client as jc;
use sluice_control::pb::{self, change_request::Change};
use std::time::{Duration, Instant};

/// The rate steps `+` and `-` take.
const STEP: f64 = 1.25;

/// Puts the terminal back however `top` ends (an error, a panic).
struct Screen;

impl Screen {
    fn enter() -> Result<Screen, Failure> {
        enable_raw_mode().context("the terminal: raw mode")?;
        execute!(std::io::stdout(), terminal::EnterAlternateScreen)
            .context("the terminal: alternate screen")?;
        Ok(Screen)
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let _ = execute!(std::io::stdout(), terminal::LeaveAlternateScreen);
        let _ = disable_raw_mode();
    }
}

struct View {
    worker: String,
    jobs: Vec<pb::JobInfo>,
    table: TableState,
    said: String,
}

pub fn top(a: TopArgs) -> Result<u8, Failure> {
    let worker = a.worker.clone();
    let rt = runtime()?;
    let mut client = rt
        .block_on(jc::open(&worker, a.tls.as_deref()))
        .map_err(|e| control_failure(e.about(&worker)))?;
    let _screen = Screen::enter()?;
    let mut term =
        ratatui::Terminal::new(ratatui::backend::CrosstermBackend::new(std::io::stdout()))
            .context("the terminal")?;
    let mut v = View {
        worker,
        jobs: Vec::new(),
        table: TableState::default().with_selected(Some(0)),
        said: String::new(),
    };
    let every = Duration::from_nanos(a.interval.0.max(100_000_000));
    let mut next = Instant::now();
    loop {
        if Instant::now() >= next {
            match rt.block_on(jc::list(&mut client)) {
                Ok(j) => v.jobs = j,
                Err(e) => v.said = e.to_string(),
            }
            next = Instant::now() + every;
            term.draw(|f| draw(f, &mut v)).context("drawing")?;
        }
        let wait = next.saturating_duration_since(Instant::now());
        if !event::poll(wait).context("the terminal's events")? {
            continue;
        }
        let Event::Key(k) = event::read().context("the terminal's events")? else {
            continue;
        };
        if k.kind != KeyEventKind::Press {
            continue;
        }
        let selected = v.table.selected().and_then(|i| v.jobs.get(i)).cloned();
        let change = match k.code {
            KeyCode::Char('q') | KeyCode::Esc => return Ok(exit::OK),
            KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                return Ok(exit::OK)
            }
            KeyCode::Down | KeyCode::Char('j') => {
                v.table.select_next();
                None
            }
            KeyCode::Up | KeyCode::Char('k') => {
                v.table.select_previous();
                None
            }
            KeyCode::Char('p') | KeyCode::Char(' ') => selected.as_ref().map(|j| {
                if j.paused {
                    Change::Resume(true)
                } else {
                    Change::Pause(true)
                }
            }),
            KeyCode::Char('+') | KeyCode::Char('=') => selected
                .as_ref()
                .map(|j| Change::Rate(format!("x{}", j.scale * STEP))),
            KeyCode::Char('-') => selected
                .as_ref()
                .map(|j| Change::Rate(format!("x{}", j.scale / STEP))),
            KeyCode::Char('s') => {
                if let Some(j) = &selected {
                    v.said = match rt.block_on(jc::stop(&mut client, j.id)) {
                        Ok(_) => format!("job {}: stopping", j.id),
                        Err(e) => e.to_string(),
                    };
                }
                None
            }
            _ => None,
        };
        if let (Some(c), Some(j)) = (change, &selected) {
            v.said = match rt.block_on(jc::change(&mut client, j.id, c, 0)) {
                Ok(info) => format!(
                    "job {}: {}{}",
                    info.id,
                    rate_text(&info),
                    info.changed_at_ns
                        .map(|n| format!(" from {:.3} s", n as f64 / 1e9))
                        .unwrap_or_default()
                ),
                Err(e) => e.to_string(),
            };
        }
        // Show the change at once.
        next = Instant::now();
    }
}

fn ns(v: Option<u64>) -> String {
    v.map_or("-".into(), sluice_engine::duration)
}

fn draw(f: &mut Frame, v: &mut View) {
    let [head, body, foot] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(2),
    ])
    .areas(f.area());
    let running = v.jobs.iter().filter(|j| j.state == "running").count();
    f.render_widget(
        Paragraph::new(format!(
            "sluice top  {}  {} jobs, {running} running",
            v.worker,
            v.jobs.len()
        ))
        .style(Style::new().add_modifier(Modifier::BOLD)),
        head,
    );
    let rows = v.jobs.iter().map(|j| {
        let loss = if j.rx_received + j.rx_lost > 0 {
            format!(
                "{:.3}%",
                j.rx_lost as f64 * 100.0 / (j.rx_received + j.rx_lost) as f64
            )
        } else {
            "-".into()
        };
        Row::new(vec![
            j.id.to_string(),
            j.name.clone(),
            j.command.clone(),
            j.to.clone(),
            j.state.clone(),
            rate_text(j),
            format!("{:.0}", j.pps),
            j.packets.to_string(),
            ns(j.eps_p50_ns),
            ns(j.eps_p99_ns),
            loss,
            ns(j.rx_latency_p50_ns),
            format!("{:.1}", j.elapsed_s),
        ])
    });
    let widths = [
        Constraint::Length(4),
        Constraint::Length(12),
        Constraint::Length(8),
        Constraint::Length(16),
        Constraint::Length(8),
        Constraint::Length(22),
        Constraint::Length(10),
        Constraint::Length(11),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(8),
        Constraint::Length(9),
        Constraint::Length(8),
    ];
    let table = Table::new(rows, widths)
        .header(
            Row::new(vec![
                "ID", "NAME", "CMD", "TO", "STATE", "RATE", "PPS", "PACKETS", "ε p50", "ε p99",
                "RX LOSS", "LAT p50", "TIME s",
            ])
            .style(Style::new().add_modifier(Modifier::BOLD)),
        )
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED))
        .block(Block::bordered());
    f.render_stateful_widget(table, body, &mut v.table);
    f.render_widget(
        Paragraph::new(format!(
            "{}\n↑↓ select  p pause/resume  + rate ×{STEP}  - rate ÷{STEP}  s stop  q quit",
            v.said
        )),
        foot,
    );
}
