//! Draws bench/growth.sh's results as one SVG: a panel per figure (converge time with the
//! API server's floor, RSS, CPU, requests per Application) against the number of
//! Applications (log scale), opsdk and kubebuilder on each.
//!
//!   growth-chart results/growth-<date>.json results/growth.svg

use std::fmt::Write as _;

use serde_json::Value;

const PANEL_W: f64 = 460.0;
const PANEL_H: f64 = 300.0;
const MARGIN: f64 = 56.0;
/// (figure key, title, unit)
const FIGURES: [(&str, &str, &str); 4] = [
    ("converge_s", "Time to converge", "s"),
    ("rss_mb", "Memory (RSS after the steady window)", "MB"),
    ("cpu_s", "Manager CPU over the run", "s"),
    ("requests_per_app", "API requests per Application", ""),
];
/// (series, colour, dashed): the floor is drawn on the converge panel only.
const SERIES: [(&str, &str, bool); 3] = [
    ("opsdk", "#c2410c", false),
    ("kubebuilder", "#1d4ed8", false),
    ("floor", "#6b7280", true),
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = args.as_slice() else {
        eprintln!("error: expected two arguments\nhelp: growth-chart GROWTH_JSON OUT_SVG");
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(input).unwrap_or_else(|e| fail(&format!("{input}: {e}")));
    let growth: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| fail(&format!("{input}: {e}")));
    let points = growth["points"].as_array().cloned().unwrap_or_default();
    if points.is_empty() {
        fail(&format!("{input}: no points"));
    }
    let svg = chart(&points, growth["date"].as_str().unwrap_or_default());
    std::fs::write(output, svg).unwrap_or_else(|e| fail(&format!("{output}: {e}")));
}

fn fail(msg: &str) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(1);
}

/// (applications, value) of `series` for `figure`, sorted by applications.
fn series(points: &[Value], name: &str, figure: &str) -> Vec<(f64, f64)> {
    let (operator, key) = if name == "floor" {
        ("opsdk", "floor_s")
    } else {
        (name, figure)
    };
    let mut out: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p["operator"] == operator)
        .filter_map(|p| Some((p["applications"].as_f64()?, p[key].as_f64()?)))
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

/// A round axis maximum at or above `max`.
fn nice_max(max: f64) -> f64 {
    let magnitude = 10f64.powf(max.max(1e-9).log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|m| *m >= max)
        .unwrap_or(10.0 * magnitude)
}

fn chart(points: &[Value], date: &str) -> String {
    let width = 2.0 * PANEL_W;
    let height = 2.0 * PANEL_H + 40.0;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/><text x="12" y="24" font-size="15">opsdk and kubebuilder operators as Applications grow ({date})</text>"#
    );
    let mut xs: Vec<f64> = points
        .iter()
        .filter_map(|p| p["applications"].as_f64())
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    for (i, (figure, title, unit)) in FIGURES.iter().enumerate() {
        let origin = ((i % 2) as f64 * PANEL_W, 40.0 + (i / 2) as f64 * PANEL_H);
        panel(
            &mut svg,
            points,
            &xs,
            origin,
            figure,
            &format!(
                "{title}{}",
                if unit.is_empty() {
                    String::new()
                } else {
                    format!(", {unit}")
                }
            ),
        );
    }
    svg.push_str("</svg>\n");
    svg
}

fn panel(
    svg: &mut String,
    points: &[Value],
    xs: &[f64],
    (ox, oy): (f64, f64),
    figure: &str,
    title: &str,
) {
    let names: Vec<_> = SERIES
        .iter()
        .filter(|(name, ..)| *name != "floor" || figure == "converge_s")
        .collect();
    let max = names
        .iter()
        .flat_map(|(name, ..)| series(points, name, figure))
        .map(|(_, y)| y)
        .fold(0.0, f64::max);
    let y_max = nice_max(max);
    let (left, right) = (ox + MARGIN, ox + PANEL_W - 16.0);
    let (top, bottom) = (oy + 28.0, oy + PANEL_H - 40.0);
    let (lo, hi) = (xs[0].ln(), xs[xs.len() - 1].ln());
    let x_of = |x: f64| {
        if hi > lo {
            left + (x.ln() - lo) / (hi - lo) * (right - left)
        } else {
            (left + right) / 2.0
        }
    };
    let y_of = |y: f64| bottom - y / y_max * (bottom - top);
    let _ = write!(
        svg,
        r#"<text x="{left}" y="{}" font-size="13">{title}</text>"#,
        oy + 18.0
    );
    for k in 0..=4 {
        let y = y_max * k as f64 / 4.0;
        let py = y_of(y);
        let _ = write!(
            svg,
            r##"<line x1="{left}" y1="{py}" x2="{right}" y2="{py}" stroke="#e5e7eb"/><text x="{}" y="{}" text-anchor="end">{}</text>"##,
            left - 6.0,
            py + 4.0,
            format_number(y)
        );
    }
    for &x in xs {
        let px = x_of(x);
        let _ = write!(
            svg,
            r##"<line x1="{px}" y1="{bottom}" x2="{px}" y2="{}" stroke="#9ca3af"/><text x="{px}" y="{}" text-anchor="middle">{}</text>"##,
            bottom + 4.0,
            bottom + 18.0,
            x
        );
    }
    let _ = write!(
        svg,
        r##"<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#374151"/><text x="{}" y="{}" text-anchor="middle">Applications (log scale)</text>"##,
        (left + right) / 2.0,
        bottom + 34.0
    );
    for (n, (name, colour, dashed)) in names.iter().enumerate() {
        let line = series(points, name, figure);
        let path: Vec<String> = line
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", x_of(x), y_of(y)))
            .collect();
        let dash = if *dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let _ = write!(
            svg,
            r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>"#,
            path.join(" ")
        );
        for &(x, y) in &line {
            let _ = write!(
                svg,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{colour}"/>"#,
                x_of(x),
                y_of(y)
            );
        }
        let ly = top + 4.0 + 16.0 * n as f64;
        let _ = write!(
            svg,
            r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{colour}" stroke-width="2"{dash}/><text x="{}" y="{}">{name}</text>"#,
            left + 10.0,
            left + 30.0,
            left + 36.0,
            ly + 4.0
        );
    }
}

fn format_number(y: f64) -> String {
    if y.fract() == 0.0 {
        format!("{y:.0}")
    } else {
        format!("{y:.1}")
    }
}
