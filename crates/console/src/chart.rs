//! The overview's chart: payouts per day by status as stacked bars, drawn on the server as SVG
//! (no script, no outside request). A pure function of the days: the SVG is an image
//! (`role="img"`) whose `<title>` sums it up, each bar segment carries its own `<title>` (shown
//! on hover), the legend is text, and the same numbers follow in a table for anyone who cannot
//! see the bars.

use chrono::NaiveDate;
use domain::overview::DaySeries;
use domain::payout::PayoutStatus;
use maud::{Markup, html};

/// The drawing's size in SVG units (it scales to its box).
const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 240.0;
/// Room for the count labels on the left, the dates below, and a little air.
const LEFT: f64 = 44.0;
const RIGHT: f64 = 8.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 30.0;

/// The plot's height: the tallest day's bar is this tall.
pub const PLOT_HEIGHT: f64 = HEIGHT - TOP - BOTTOM;

/// A status's fill: distinct hues, each dark enough to stand out on white (3:1 or more).
pub const fn colour(status: PayoutStatus) -> &'static str {
    match status {
        PayoutStatus::Awaiting => "#a16207",
        PayoutStatus::Pending => "#1d4ed8",
        PayoutStatus::Unassessed => "#7e22ce",
        PayoutStatus::InProgress => "#0e7490",
        PayoutStatus::Successful => "#15803d",
        PayoutStatus::Cancelled => "#57534e",
        PayoutStatus::Failed => "#b91c1c",
        PayoutStatus::SuccessfulPendingKyc => "#4d7c0f",
    }
}

fn short(day: NaiveDate) -> String {
    day.format("%-d %b").to_string()
}

fn long(day: NaiveDate) -> String {
    day.format("%-d %b %Y").to_string()
}

/// The statuses that occur in `days`, in [`PayoutStatus::ALL`] order, with their totals.
fn present(days: &[DaySeries]) -> Vec<(PayoutStatus, u64)> {
    PayoutStatus::ALL
        .iter()
        .map(|s| (*s, days.iter().map(|d| d.of(*s)).sum::<u64>()))
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// The sentence the SVG's `<title>` says.
pub fn summary(days: &[DaySeries]) -> String {
    let (Some(first), Some(last)) = (days.first(), days.last()) else {
        return "Payouts per day: no days to show.".to_owned();
    };
    let span = format!(
        "Payouts created per day by status, {} to {} (UTC)",
        short(first.day),
        long(last.day)
    );
    let total: u64 = days.iter().map(DaySeries::total).sum();
    let busiest = days.iter().max_by_key(|d| (d.total(), d.day));
    match busiest {
        Some(busiest) if total > 0 => {
            let by_status: Vec<String> = present(days)
                .iter()
                .map(|(s, n)| format!("{n} {}", s.as_str()))
                .collect();
            format!(
                "{span}: {total} in all ({}); the most, {}, on {}.",
                by_status.join(", "),
                busiest.total(),
                short(busiest.day)
            )
        }
        _ => format!("{span}: none."),
    }
}

/// One segment of a stacked bar, in SVG units.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// The day.
    pub day: NaiveDate,
    /// The status.
    pub status: PayoutStatus,
    /// How many.
    pub count: u64,
    /// Left edge.
    pub x: f64,
    /// Top edge.
    pub y: f64,
    /// Width.
    pub width: f64,
    /// Height: `count / tallest day's total × PLOT_HEIGHT`.
    pub height: f64,
}

/// Where each non-empty day and status is drawn: bars stacked in [`PayoutStatus::ALL`] order
/// from the axis up, the tallest day filling the plot.
pub fn segments(days: &[DaySeries]) -> Vec<Segment> {
    let tallest = days.iter().map(DaySeries::total).max().unwrap_or(0);
    if tallest == 0 {
        return Vec::new();
    }
    let slot = (WIDTH - LEFT - RIGHT) / days.len().max(1) as f64;
    let width = slot * 0.7;
    let unit = PLOT_HEIGHT / tallest as f64;
    let mut drawn = Vec::new();
    for (i, day) in days.iter().enumerate() {
        let x = LEFT + slot * i as f64 + (slot - width) / 2.0;
        let mut base = HEIGHT - BOTTOM;
        for (status, count) in day.counts.iter().filter(|(_, n)| *n > 0) {
            let height = *count as f64 * unit;
            base -= height;
            drawn.push(Segment {
                day: day.day,
                status: *status,
                count: *count,
                x,
                y: base,
                width,
                height,
            });
        }
    }
    drawn
}

/// A number of SVG units, to a tenth.
fn n(value: f64) -> String {
    format!("{value:.1}")
}

/// The chart, its legend and its table, in a `<figure class="chart">` (one per page: its ids
/// are fixed).
pub fn payouts_per_day(days: &[DaySeries]) -> Markup {
    let tallest = days.iter().map(DaySeries::total).max().unwrap_or(0);
    let slot = (WIDTH - LEFT - RIGHT) / days.len().max(1) as f64;
    let axis = HEIGHT - BOTTOM;
    // Count labels: 0, the tallest, and half-way when it is a whole number.
    let mut ticks = vec![0u64];
    if tallest > 0 {
        if tallest.is_multiple_of(2) && tallest > 2 {
            ticks.push(tallest / 2);
        }
        ticks.push(tallest);
    }
    let last = days.len().saturating_sub(1);
    let statuses = present(days);
    html! {
        figure.chart {
            svg xmlns="http://www.w3.org/2000/svg" role="img" aria-labelledby="chart-title"
                viewBox=(format!("0 0 {WIDTH} {HEIGHT}")) width=(WIDTH) height=(HEIGHT) {
                title #chart-title { (summary(days)) }
                @for tick in &ticks {
                    @let y = if tallest == 0 { axis } else { axis - PLOT_HEIGHT * (*tick as f64) / tallest as f64 };
                    line x1=(n(LEFT)) x2=(n(WIDTH - RIGHT)) y1=(n(y)) y2=(n(y)) stroke="#c9d0d8" stroke-width="1" {}
                    text x=(n(LEFT - 6.0)) y=(n(y + 4.0)) text-anchor="end" font-size="11" fill="#4a5260" { (tick) }
                }
                @for (i, day) in days.iter().enumerate() {
                    @if (last - i).is_multiple_of(7) {
                        text x=(n(LEFT + slot * (i as f64 + 0.5))) y=(n(HEIGHT - 10.0)) text-anchor="middle" font-size="11" fill="#4a5260" { (short(day.day)) }
                    }
                }
                @for s in segments(days) {
                    rect x=(n(s.x)) y=(n(s.y)) width=(n(s.width)) height=(n(s.height)) fill=(colour(s.status)) {
                        title { (short(s.day)) ": " (s.count) " " (s.status.as_str()) }
                    }
                }
                @if tallest == 0 {
                    text x=(n(LEFT + (WIDTH - LEFT - RIGHT) / 2.0)) y=(n(TOP + PLOT_HEIGHT / 2.0)) text-anchor="middle" font-size="13" fill="#4a5260" { "No payouts in these days." }
                }
            }
            figcaption { "Payouts created per UTC day, by their status now." }
            @if !statuses.is_empty() {
                ul.legend aria-label="Legend" {
                    @for (status, total) in &statuses {
                        li {
                            svg.swatch xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10" aria-hidden="true" focusable="false" {
                                rect width="10" height="10" fill=(colour(*status)) {}
                            }
                            (status.as_str()) " (" (total) ")"
                        }
                    }
                }
            }
            details {
                summary { "The numbers as a table" }
                div.table-wrap role="region" aria-labelledby="chart-table-caption" tabindex="0" {
                    table {
                        caption #chart-table-caption { "Payouts created per UTC day, by status" }
                        thead { tr {
                            th scope="col" { "Day" }
                            @for (status, _) in &statuses { th.num scope="col" { (status.as_str()) } }
                            th.num scope="col" { "Total" }
                        } }
                        tbody {
                            @for day in days {
                                tr {
                                    th scope="row" { time datetime=(day.day.format("%Y-%m-%d")) { (long(day.day)) } }
                                    @for (status, _) in &statuses { td.num { (day.of(*status)) } }
                                    td.num { (day.total()) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::overview::{DayStatusCount, fill_days};

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 11, 29).unwrap_or(NaiveDate::MIN)
    }

    fn days(counts: &[(i64, PayoutStatus, u64)]) -> Vec<DaySeries> {
        let counts: Vec<DayStatusCount> = counts
            .iter()
            .map(|(ago, status, count)| DayStatusCount {
                day: today() - chrono::Duration::days(*ago),
                status: *status,
                count: *count,
            })
            .collect();
        fill_days(today(), &counts)
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn bar_heights_are_proportional_and_the_tallest_day_fills_the_plot() {
        let days = days(&[
            (0, PayoutStatus::Pending, 2),
            (0, PayoutStatus::Failed, 2),
            (3, PayoutStatus::Successful, 1),
        ]);
        let drawn = segments(&days);
        assert_eq!(drawn.len(), 3);
        let on_today: Vec<&Segment> = drawn.iter().filter(|s| s.day == today()).collect();
        assert!(close(on_today.iter().map(|s| s.height).sum(), PLOT_HEIGHT));
        assert!(close(on_today[0].height, on_today[1].height), "2 and 2");
        let one = drawn.iter().find(|s| s.status == PayoutStatus::Successful);
        assert!(
            one.is_some_and(|s| close(s.height, PLOT_HEIGHT / 4.0)),
            "1 of 4"
        );
        // Stacked in status order from the axis: pending (code 1) below failed (code 6).
        assert_eq!(on_today[0].status, PayoutStatus::Pending);
        assert!(close(on_today[0].y + on_today[0].height, HEIGHT - BOTTOM));
        assert!(close(on_today[1].y + on_today[1].height, on_today[0].y));
        // Later days are further right.
        assert!(drawn[0].x < on_today[0].x);
    }

    #[test]
    fn empty_days_draw_nothing_but_keep_their_place() {
        let days = days(&[
            (29, PayoutStatus::Pending, 1),
            (0, PayoutStatus::Pending, 1),
        ]);
        let drawn = segments(&days);
        assert_eq!(drawn.len(), 2);
        let slot = (WIDTH - LEFT - RIGHT) / 30.0;
        assert!(close(drawn[1].x - drawn[0].x, slot * 29.0));
        let table = payouts_per_day(&days).into_string();
        assert_eq!(table.matches("<tr>").count(), 31, "a header and every day");
        assert_eq!(table.matches("<rect x=").count(), 2);
    }

    #[test]
    fn an_all_zero_month_says_so_and_draws_no_bar() {
        let days = days(&[]);
        assert!(segments(&days).is_empty());
        let svg = payouts_per_day(&days).into_string();
        assert!(svg.contains("role=\"img\""));
        assert!(svg.contains(
            "<title id=\"chart-title\">Payouts created per day by status, 31 Oct to 29 Nov 2026 (UTC): none.</title>"
        ), "{svg}");
        assert!(svg.contains("No payouts in these days."));
        assert!(!svg.contains("<rect x="));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
        assert!(!svg.contains("class=\"legend\""), "no legend for nothing");
    }

    #[test]
    fn the_title_sums_up_and_the_legend_and_axis_are_text() {
        let days = days(&[
            (0, PayoutStatus::Pending, 3),
            (1, PayoutStatus::Failed, 1),
            (1, PayoutStatus::Pending, 1),
        ]);
        assert_eq!(
            summary(&days),
            "Payouts created per day by status, 31 Oct to 29 Nov 2026 (UTC): 5 in all \
             (4 pending, 1 failed); the most, 3, on 29 Nov."
        );
        let html = payouts_per_day(&days).into_string();
        assert!(html.contains("pending (4)") && html.contains("failed (1)"));
        assert!(!html.contains("successful ("), "only statuses that occur");
        // Dates on the axis every 7 days back from today.
        for label in ["29 Nov", "22 Nov", "15 Nov", "8 Nov", "1 Nov"] {
            assert!(html.contains(&format!(">{label}</text>")), "{label}");
        }
        assert!(html.contains("<title>29 Nov: 3 pending</title>"));
        assert!(!html.contains("<script"));
        assert_eq!(
            html.matches("http").count(),
            html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count(),
            "no address but the SVG namespace"
        );
    }

    #[test]
    fn every_status_has_its_own_colour() {
        let mut seen: Vec<&str> = PayoutStatus::ALL.iter().map(|s| colour(*s)).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), PayoutStatus::ALL.len());
    }
}
