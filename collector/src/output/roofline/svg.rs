//! A roofline chart as a standalone SVG 1.1 document: pure functions, no I/O.
//!
//! Both axes are logarithmic and span whole decades: x is arithmetic intensity
//! (FLOP per DRAM byte), y is performance (ticks labelled in TFLOP/s, or GFLOP/s when
//! the chart tops out below 10 TFLOP/s). The ranges hold every drawable point and
//! every ceiling's ridge point with at least a tenth of a decade to spare.
//!
//! The roof is the memory ceiling (`y = bandwidth × x`), drawn once from where it
//! enters the plot up to the highest compute ceiling's ridge point (its knee), then
//! one horizontal segment per compute ceiling from its own ridge point to the right
//! edge of the plot. The highest ceiling is solid, lower ones dashed. Each carries its
//! label and peak at its right end, above the line where that crosses neither the
//! memory slope, another ceiling nor another label, else below it; ceilings drawn at
//! the same height share one label. The memory slope carries the bandwidth. Labels
//! sit on a white outline so they stay readable over circles.
//!
//! Each kernel is a semi-transparent circle coloured by family, area proportional to
//! its GPU time (radius `MAX_RADIUS × sqrt(gpu_ns / max gpu_ns)`, at least
//! `MIN_RADIUS`), with a `<title>` tooltip. Larger circles are drawn first so small
//! ones stay visible. Points whose intensity or performance is not a positive finite
//! number are skipped and listed in [`Layout::skipped`]. The legend on the right lists
//! the families present.
//!
//! The same input gives the same bytes: coordinates are printed with at most two
//! decimals and nothing depends on hashing or the environment.

use crate::analysis::short_name::short_name;
use std::fmt::Write;

use super::layout::{
    layout, si, sig, truncate, Chart, Layout, PointLayout, Rect, FAMILIES, GRID_RGB,
    LOWER_CEILING_RGB, POINT_OPACITY, ROOF_RGB, ROOF_WIDTH,
};

/// A coordinate with at most two decimals, no trailing zeros, no "-0".
fn num(v: f64) -> String {
    if !v.is_finite() {
        return "0".to_string();
    }
    let mut s = format!("{v:.2}");
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    if s == "-0" {
        s = "0".to_string();
    }
    s
}

fn hex((r, g, b): (u8, u8, u8)) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// Text for XML character data and attribute values: markup characters escaped,
/// characters XML 1.0 does not allow replaced by U+FFFD.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

fn duration(ns: u64) -> String {
    let v = ns as f64;
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{} µs", sig(v / 1e3))
    } else if ns < 1_000_000_000 {
        format!("{} ms", sig(v / 1e6))
    } else {
        format!("{} s", sig(v / 1e9))
    }
}

/// "1" followed or preceded by zeros for 10^e, or "1e{e}" when that gets long.
fn decade_label(e: i32) -> String {
    match e {
        0..=6 => format!("1{}", "0".repeat(e as usize)),
        -6..=-1 => format!("0.{}1", "0".repeat((-e - 1) as usize)),
        _ => format!("1e{e}"),
    }
}

/// Label every `n`th decade so labels at least `min_gap` apart.
fn label_step(per_decade: f64, min_gap: f64) -> i32 {
    if per_decade >= min_gap {
        1
    } else {
        (min_gap / per_decade).ceil().min(1000.0) as i32
    }
}

/// `text` (already escaped) twice: a white outline, then filled with `fill`.
fn halo_text(s: &mut String, attrs: &str, fill: &str, text: &str) -> std::fmt::Result {
    writeln!(
        s,
        r##"<text {attrs} fill="#ffffff" stroke="#ffffff" stroke-width="3" stroke-linejoin="round">{text}</text>"##
    )?;
    writeln!(s, r#"<text {attrs} fill="{fill}">{text}</text>"#)
}

/// The chart as a standalone SVG 1.1 document.
pub fn render_svg(chart: &Chart) -> String {
    let lay = layout(chart);
    let p = lay.plot;
    let mut s = String::new();
    // Writing into a String cannot fail.
    let _ = write_svg(&mut s, chart, &lay, p);
    s
}

/// Writes the document: title, axes, roof, points, labels and legend, in drawing
/// order (later parts are drawn over earlier ones).
fn write_svg(s: &mut String, chart: &Chart, lay: &Layout, p: Rect) -> std::fmt::Result {
    write_title(s, chart, lay)?;
    write_grid(s, lay, p)?;
    write_ticks(s, lay, p)?;
    write_tick_labels(s, lay, p)?;
    write_axis_titles(s, lay, p)?;
    write_roof(s, lay)?;
    write_ridge(s, lay, p)?;
    write_points(s, chart, lay)?;
    write_point_labels(s, chart, lay, p)?;
    write_roof_labels(s, chart, lay)?;
    write_legend(s, lay, p)?;
    writeln!(s, "</svg>")
}

/// One of the chart's two axes, for what is drawn alike along both: grid lines and
/// tick marks at the decades shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Axis {
    /// Arithmetic intensity, left to right.
    X,
    /// Performance, bottom to top.
    Y,
}

impl Axis {
    /// The decades it spans.
    fn decades(self, lay: &Layout) -> (i32, i32) {
        match self {
            Axis::X => lay.x_decades,
            Axis::Y => lay.y_decades,
        }
    }

    /// Where a log10 value lies along it.
    fn at(self, lay: &Layout, log: f64) -> f64 {
        match self {
            Axis::X => lay.x_of(log),
            Axis::Y => lay.y_of(log),
        }
    }

    /// User units per decade along it.
    fn per_decade(self, lay: &Layout) -> f64 {
        let (x, y) = lay.per_decade();
        match self {
            Axis::X => x,
            Axis::Y => y,
        }
    }

    /// Every how many decades one is drawn (grid, tick, label): all of them unless
    /// their labels get too close.
    fn step(self, lay: &Layout) -> i32 {
        let min_gap = match self {
            Axis::X => 56.0,
            Axis::Y => 18.0,
        };
        label_step(self.per_decade(lay), min_gap)
    }

    /// The decades drawn.
    fn shown(self, lay: &Layout) -> impl Iterator<Item = i32> {
        let (lo, hi) = self.decades(lay);
        let step = self.step(lay);
        (lo..=hi).filter(move |&k| (k - lo) % step == 0)
    }

    /// A line across the axis at `at`, spanning `from..to` the other way.
    fn line(self, s: &mut String, at: f64, (from, to): (f64, f64)) -> std::fmt::Result {
        match self {
            Axis::X => writeln!(
                s,
                r#"<line x1="{x}" y1="{}" x2="{x}" y2="{}"/>"#,
                num(from),
                num(to),
                x = num(at)
            ),
            Axis::Y => writeln!(
                s,
                r#"<line x1="{}" y1="{y}" x2="{}" y2="{y}"/>"#,
                num(from),
                num(to),
                y = num(at)
            ),
        }
    }

    /// The span of a tick mark `length` long, outside the plot `p`.
    fn tick_span(self, p: Rect, length: f64) -> (f64, f64) {
        match self {
            Axis::X => (p.bottom(), p.bottom() + length),
            Axis::Y => (p.x - length, p.x),
        }
    }

    /// The span of a grid line: across the plot `p`.
    fn grid_span(self, p: Rect) -> (f64, f64) {
        match self {
            Axis::X => (p.y, p.bottom()),
            Axis::Y => (p.x, p.right()),
        }
    }
}

/// Both axes, in drawing order.
const AXES: [Axis; 2] = [Axis::X, Axis::Y];

/// The XML declaration, the `<svg>` element's start, the `<title>`, the white
/// background and the chart title on top.
fn write_title(s: &mut String, chart: &Chart, lay: &Layout) -> std::fmt::Result {
    writeln!(s, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
    writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif">"#,
        w = num(lay.width),
        h = num(lay.height)
    )?;
    writeln!(s, "<title>{}</title>", escape(&chart.title))?;
    writeln!(
        s,
        r##"<rect x="0" y="0" width="{}" height="{}" fill="#ffffff"/>"##,
        num(lay.width),
        num(lay.height)
    )?;
    // Long titles get a smaller font (bold sans-serif: about 0.7 em a character) so
    // they fit the width; very long ones are cut.
    let title = truncate(&chart.title, 120);
    let title_size = ((lay.width - 40.0) / (title.chars().count() as f64 * 0.7)).clamp(9.0, 18.0);
    writeln!(
        s,
        r##"<text x="{}" y="32" font-size="{}" font-weight="bold" text-anchor="middle" fill="#222222">{}</text>"##,
        num(lay.width / 2.0),
        num(title_size),
        escape(&title)
    )
}

/// The decade grid lines, then the frame of the plot `p`.
fn write_grid(s: &mut String, lay: &Layout, p: Rect) -> std::fmt::Result {
    writeln!(s, r#"<g stroke="{}" stroke-width="1">"#, hex(GRID_RGB))?;
    for axis in AXES {
        for k in axis.shown(lay) {
            axis.line(s, axis.at(lay, f64::from(k)), axis.grid_span(p))?;
        }
    }
    writeln!(s, "</g>")?;
    writeln!(
        s,
        r##"<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#888888" stroke-width="1"/>"##,
        num(p.x),
        num(p.y),
        num(p.width),
        num(p.height)
    )
}

/// Tick marks outside the plot `p`: long at the decades shown, short at 2..9 when
/// every decade is shown and wide enough.
fn write_ticks(s: &mut String, lay: &Layout, p: Rect) -> std::fmt::Result {
    writeln!(s, r##"<g stroke="#888888" stroke-width="1">"##)?;
    for axis in AXES {
        let last = axis.decades(lay).1;
        let minor = axis.step(lay) == 1 && axis.per_decade(lay) >= 40.0;
        for k in axis.shown(lay) {
            axis.line(s, axis.at(lay, f64::from(k)), axis.tick_span(p, 6.0))?;
            if k < last && minor {
                for m in 2..=9 {
                    let at = axis.at(lay, f64::from(k) + f64::from(m).log10());
                    axis.line(s, at, axis.tick_span(p, 3.0))?;
                }
            }
        }
    }
    writeln!(s, "</g>")
}

/// The power of ten of the y axis's unit, and its name: TFLOP/s, or GFLOP/s when the
/// chart tops out below 10 TFLOP/s.
fn y_unit(lay: &Layout) -> (i32, &'static str) {
    if lay.y_decades.1 >= 13 {
        (12, "TFLOP/s")
    } else {
        (9, "GFLOP/s")
    }
}

/// The decade labels: intensity below the plot `p`, performance (in the y unit) left
/// of it.
fn write_tick_labels(s: &mut String, lay: &Layout, p: Rect) -> std::fmt::Result {
    let (unit_exp, _) = y_unit(lay);
    writeln!(s, r##"<g font-size="12" fill="#333333">"##)?;
    for k in Axis::X.shown(lay) {
        writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            num(lay.x_of(f64::from(k))),
            num(p.bottom() + 20.0),
            decade_label(k)
        )?;
    }
    for k in Axis::Y.shown(lay) {
        writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
            num(p.x - 9.0),
            num(lay.y_of(f64::from(k)) + 4.0),
            decade_label(k.saturating_sub(unit_exp))
        )?;
    }
    writeln!(s, "</g>")
}

/// The axis titles: below the plot `p`, and rotated left of it.
fn write_axis_titles(s: &mut String, lay: &Layout, p: Rect) -> std::fmt::Result {
    let (_, unit) = y_unit(lay);
    writeln!(
        s,
        r##"<text x="{}" y="{}" font-size="14" text-anchor="middle" fill="#222222">Arithmetic intensity (FLOP/byte)</text>"##,
        num(p.x + p.width / 2.0),
        num(p.bottom() + 46.0)
    )?;
    let (tx, ty) = (24.0, p.y + p.height / 2.0);
    writeln!(
        s,
        r##"<text x="{x}" y="{y}" font-size="14" text-anchor="middle" fill="#222222" transform="rotate(-90 {x} {y})">Performance ({unit})</text>"##,
        x = num(tx),
        y = num(ty)
    )
}

/// The roof: the memory slope and the highest ceiling as one polyline, then the
/// lower ceilings dashed.
fn write_roof(s: &mut String, lay: &Layout) -> std::fmt::Result {
    let mut roof_line: Vec<(f64, f64)> = lay.memory.clone();
    for c in lay.ceilings.iter().filter(|c| c.highest) {
        for &pt in &c.points {
            let same = roof_line
                .last()
                .is_some_and(|l| (l.0 - pt.0).abs() < 0.01 && (l.1 - pt.1).abs() < 0.01);
            if !same {
                roof_line.push(pt);
            }
        }
    }
    if roof_line.len() >= 2 {
        let pts: Vec<String> = roof_line
            .iter()
            .map(|&(x, y)| format!("{},{}", num(x), num(y)))
            .collect();
        writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="{}" stroke-linejoin="round"/>"#,
            pts.join(" "),
            hex(ROOF_RGB),
            num(ROOF_WIDTH)
        )?;
    }
    let lower = hex(LOWER_CEILING_RGB);
    for c in lay.ceilings.iter().filter(|c| !c.highest) {
        if let [(x1, y1), (x2, y2)] = c.points[..] {
            writeln!(
                s,
                r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{lower}" stroke-width="1.5" stroke-dasharray="6 4"/>"#,
                num(x1),
                num(y1),
                num(x2),
                num(y2)
            )?;
        }
    }
    Ok(())
}

/// The ridge point of the highest ceiling, where the roof bends: a dotted line from
/// the knee down to the x axis, labelled with its arithmetic intensity (kernels to its
/// left are memory-bound). Nothing when the knee is not inside the plot.
fn write_ridge(s: &mut String, lay: &Layout, p: Rect) -> std::fmt::Result {
    let Some(c) = lay.ceilings.iter().find(|c| c.highest) else {
        return Ok(());
    };
    let (Some(ridge), Some(&(x, y))) = (c.ridge_intensity, c.points.first()) else {
        return Ok(());
    };
    if !(p.x..=p.right()).contains(&x) || !(p.y..=p.bottom()).contains(&y) {
        return Ok(());
    }
    let colour = hex(LOWER_CEILING_RGB);
    writeln!(
        s,
        r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{colour}" stroke-width="1" stroke-dasharray="2 3"/>"#,
        num(x),
        num(y),
        num(x),
        num(p.bottom())
    )?;
    writeln!(
        s,
        r#"<text x="{}" y="{}" font-size="11" fill="{colour}">ridge {} FLOP/byte</text>"#,
        num(x + 4.0),
        num(p.bottom() - 6.0),
        sig(ridge)
    )
}

/// The kernels' circles with their tooltips, largest first so small ones stay on
/// top.
fn write_points(s: &mut String, chart: &Chart, lay: &Layout) -> std::fmt::Result {
    let mut order: Vec<&PointLayout> = lay.points.iter().collect();
    order.sort_by(|a, b| b.radius.total_cmp(&a.radius).then(a.index.cmp(&b.index)));
    writeln!(s, r#"<g stroke-width="1">"#)?;
    for pt in order {
        let cp = &chart.points[pt.index];
        let colour = hex(FAMILIES[pt.family].1);
        writeln!(
            s,
            r#"<circle cx="{}" cy="{}" r="{}" fill="{colour}" fill-opacity="{}" stroke="{colour}"><title>{}&#10;{}: {} FLOP/byte, {}FLOP/s, GPU time {}</title></circle>"#,
            num(pt.x),
            num(pt.y),
            num(pt.radius),
            num(POINT_OPACITY),
            escape(&cp.label),
            FAMILIES[pt.family].0,
            sig(cp.intensity),
            si(cp.flops_per_s),
            duration(cp.gpu_ns)
        )?;
    }
    writeln!(s, "</g>")
}

/// How many of the largest points (by GPU time) are named on the chart.
const NAMED_POINTS: usize = 5;
/// The most characters of a point's name on the chart.
const POINT_NAME_CHARS: usize = 28;

/// The names of the [`NAMED_POINTS`] largest points beside their circles (a GEMM
/// shape's dimensions, a kernel's short name, cut to [`POINT_NAME_CHARS`]), right of the circle or, where that leaves the
/// plot `p`, left of it; a name that would overlap one already placed is left out
/// (the tooltip has it).
fn write_point_labels(s: &mut String, chart: &Chart, lay: &Layout, p: Rect) -> std::fmt::Result {
    let mut order: Vec<&PointLayout> = lay.points.iter().collect();
    order.sort_by(|a, b| {
        let (ga, gb) = (chart.points[a.index].gpu_ns, chart.points[b.index].gpu_ns);
        gb.cmp(&ga).then(a.index.cmp(&b.index))
    });
    let mut placed: Vec<(f64, f64, f64, f64)> = Vec::new();
    for pt in order.into_iter().take(NAMED_POINTS) {
        let label = &chart.points[pt.index].label;
        // A GEMM shape by its dimensions, a kernel by its short name.
        let mut name = match label.strip_prefix("GEMM ") {
            Some(shape) => format!("GEMM {}", shape.split(' ').next().unwrap_or(shape)),
            None => short_name(label),
        };
        if name.chars().count() > POINT_NAME_CHARS {
            name = name.chars().take(POINT_NAME_CHARS - 1).collect::<String>() + "\u{2026}";
        }
        // About 6.5 user units a character at font size 11.
        let width = name.chars().count() as f64 * 6.5;
        let right = pt.x + pt.radius + 4.0;
        let (x0, anchor) = if right + width <= p.right() {
            (right, "start")
        } else {
            (pt.x - pt.radius - 4.0 - width, "end")
        };
        let rect = (x0, pt.y - 10.0, x0 + width, pt.y + 4.0);
        let overlaps =
            |r: &(f64, f64, f64, f64)| rect.0 < r.2 && r.0 < rect.2 && rect.1 < r.3 && r.1 < rect.3;
        if placed.iter().any(overlaps) {
            continue;
        }
        placed.push(rect);
        let x = if anchor == "start" { x0 } else { x0 + width };
        let attrs = format!(
            r#"x="{}" y="{}" font-size="11" text-anchor="{anchor}" class="point-name""#,
            num(x),
            num(pt.y + 4.0)
        );
        halo_text(s, &attrs, "#222222", &escape(&name))?;
    }
    Ok(())
}

/// The roof's labels, over the points, each on a white halo so it stays readable:
/// the bandwidth along the memory slope (where it fits), then each ceiling's.
fn write_roof_labels(s: &mut String, chart: &Chart, lay: &Layout) -> std::fmt::Result {
    let roof = hex(ROOF_RGB);
    if let [(x1, y1), (x2, y2)] = lay.memory[..] {
        // Bandwidth along the slope, above it, centred on its visible part.
        let (dx, dy) = (x2 - x1, y2 - y1);
        let text = format!("DRAM {}B/s", si(chart.bandwidth_bytes_per_s));
        if dx.hypot(dy) >= text.chars().count() as f64 * 7.0 + 20.0 {
            let angle = dy.atan2(dx);
            let (x, y) = (
                num((x1 + x2) / 2.0 + 7.0 * angle.sin()),
                num((y1 + y2) / 2.0 - 7.0 * angle.cos()),
            );
            let attrs = format!(
                r#"x="{x}" y="{y}" font-size="12" text-anchor="middle" transform="rotate({} {x} {y})""#,
                num(angle.to_degrees())
            );
            halo_text(s, &attrs, &roof, &escape(&text))?;
        }
    }
    let lower = hex(LOWER_CEILING_RGB);
    for c in &lay.ceilings {
        if let Some(label) = &c.label {
            let attrs = format!(
                r#"x="{}" y="{}" font-size="12" text-anchor="end""#,
                num(label.at.0),
                num(label.at.1)
            );
            let fill = if c.highest { &roof } else { &lower };
            halo_text(s, &attrs, fill, &escape(&label.text))?;
        }
    }
    Ok(())
}

/// The legend, right of the plot `p`: the families present with their colours and
/// what a circle's area means, then how many kernels were not plotted.
fn write_legend(s: &mut String, lay: &Layout, p: Rect) -> std::fmt::Result {
    let lx = p.right() + 18.0;
    let mut ly = p.y + 10.0;
    let mut present = [false; FAMILIES.len()];
    for pt in &lay.points {
        present[pt.family] = true;
    }
    if present.iter().any(|&b| b) {
        writeln!(
            s,
            r##"<text x="{}" y="{}" font-size="13" font-weight="bold" fill="#222222">Kernel family</text>"##,
            num(lx),
            num(ly)
        )?;
        ly += 22.0;
        for (i, (name, rgb)) in FAMILIES.iter().enumerate() {
            if !present[i] {
                continue;
            }
            let colour = hex(*rgb);
            writeln!(
                s,
                r#"<circle cx="{}" cy="{}" r="6" fill="{colour}" fill-opacity="{}" stroke="{colour}" stroke-width="1"/>"#,
                num(lx + 6.0),
                num(ly - 4.0),
                num(POINT_OPACITY)
            )?;
            writeln!(
                s,
                r##"<text x="{}" y="{}" font-size="12" fill="#333333">{name}</text>"##,
                num(lx + 18.0),
                num(ly)
            )?;
            ly += 20.0;
        }
        ly += 6.0;
        writeln!(
            s,
            r##"<text x="{}" y="{}" font-size="11" fill="#666666">Circle area ∝ GPU time</text>"##,
            num(lx),
            num(ly)
        )?;
        ly += 16.0;
    }
    if !lay.skipped.is_empty() {
        let n = lay.skipped.len();
        writeln!(
            s,
            r##"<text x="{}" y="{}" font-size="11" fill="#666666">{n} kernel{} not plotted</text>"##,
            num(lx),
            num(ly),
            if n == 1 { "" } else { "s" }
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::roofline::layout::*;
    use crate::output::roofline::layout::{rects_overlap, segment_hits};

    fn h100() -> Chart {
        Chart {
            title: "NVIDIA H100 80GB HBM3 — roofline".to_string(),
            bandwidth_bytes_per_s: 3.35e12,
            ceilings: vec![
                Ceiling {
                    label: "BF16 tensor".to_string(),
                    flops_per_s: 989.4e12,
                },
                Ceiling {
                    label: "FP32".to_string(),
                    flops_per_s: 67e12,
                },
            ],
            points: vec![
                ChartPoint {
                    label: "sm90_xmma_gemm_bf16bf16_bf16f32".to_string(),
                    family: "GEMM".to_string(),
                    intensity: 800.0,
                    flops_per_s: 700e12,
                    gpu_ns: 10_000_000,
                },
                ChartPoint {
                    label: "gemv2T_kernel_val<float, 128>".to_string(),
                    family: "GEMM".to_string(),
                    intensity: 1.0,
                    flops_per_s: 3.0e12,
                    gpu_ns: 2_000_000,
                },
                ChartPoint {
                    label: "vectorized_elementwise_kernel<4, add>".to_string(),
                    family: "elementwise".to_string(),
                    intensity: 0.25,
                    flops_per_s: 0.5e12,
                    gpu_ns: 500_000,
                },
            ],
        }
    }

    /// The largest points carry their short names, cut to fit, each once, beside its
    /// circle and inside the plot.
    #[test]
    fn roofline_svg_names_the_largest_points() {
        let chart = h100();
        let svg = render_svg(&chart);
        let lay = layout(&chart);
        let names: Vec<&str> = svg
            .split(r##"class="point-name" fill="#222222">"##)
            .skip(1)
            .map(|t| &t[..t.find("</text>").unwrap()])
            .collect();
        assert_eq!(
            names,
            [
                "sm90_xmma_gemm_bf16bf16_bf1\u{2026}",
                "gemv2T_kernel_val&lt;\u{2026}&gt;",
                "vectorized_elementwise_kern\u{2026}"
            ]
        );
        // Each beside its circle, 4 units off: right of it, or left where the name
        // would leave the plot.
        for (pt, name) in lay.points.iter().zip(&names) {
            let width = name
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .chars()
                .count() as f64
                * 6.5;
            let y = num(pt.y + 4.0);
            let right = pt.x + pt.radius + 4.0;
            let at = if right + width <= lay.plot.right() {
                format!(
                    r#"x="{}" y="{y}" font-size="11" text-anchor="start""#,
                    num(right)
                )
            } else {
                let left = pt.x - pt.radius - 4.0;
                format!(
                    r#"x="{}" y="{y}" font-size="11" text-anchor="end""#,
                    num(left)
                )
            };
            assert!(svg.contains(&at), "{name}: {at}");
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 0.01
    }

    fn assert_xy(got: (f64, f64), want: (f64, f64)) {
        assert!(
            close(got.0, want.0) && close(got.1, want.1),
            "got {got:?}, want {want:?}"
        );
    }

    fn render_png(svg: &str) -> resvg::tiny_skia::Pixmap {
        let tree =
            resvg::usvg::Tree::from_str(svg, &resvg::usvg::Options::default()).expect("SVG parses");
        let size = tree.size().to_int_size();
        assert_eq!((size.width(), size.height()), (900, 600));
        let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).unwrap();
        resvg::render(
            &tree,
            resvg::tiny_skia::Transform::default(),
            &mut pixmap.as_mut(),
        );
        pixmap
    }

    fn rgb_at(pixmap: &resvg::tiny_skia::Pixmap, x: f64, y: f64) -> (u8, u8, u8) {
        let c = pixmap.pixel(x.floor() as u32, y.floor() as u32).unwrap();
        assert_eq!(c.alpha(), 255, "opaque at ({x}, {y})");
        (c.red(), c.green(), c.blue())
    }

    fn assert_rgb_near(got: (u8, u8, u8), want: (u8, u8, u8), what: &str) {
        let d = |a: u8, b: u8| (i16::from(a) - i16::from(b)).abs();
        assert!(
            d(got.0, want.0) <= 2 && d(got.1, want.1) <= 2 && d(got.2, want.2) <= 2,
            "{what}: got {got:?}, want {want:?}"
        );
    }

    fn blend(fg: (u8, u8, u8), bg: (u8, u8, u8)) -> (u8, u8, u8) {
        let m = |f: u8, b: u8| {
            (POINT_OPACITY * f64::from(f) + (1.0 - POINT_OPACITY) * f64::from(b)).round() as u8
        };
        (m(fg.0, bg.0), m(fg.1, bg.1), m(fg.2, bg.2))
    }

    #[test]
    fn roofline_svg_layout_h100_by_hand() {
        let lay = layout(&h100());
        // x: 0.25 .. 800 and ridges 20, 295.3 with 0.1 decade margin -> 10^-1 .. 10^4,
        // 600 units / 5 decades = 120 per decade from x = 90.
        // y: 0.5e12 .. 989.4e12 -> 10^11 .. 10^16, 450 / 5 = 90 per decade up from 510.
        assert_eq!(lay.x_decades, (-1, 4));
        assert_eq!(lay.y_decades, (11, 16));
        assert_eq!(lay.plot, PLOT);
        assert_eq!((lay.width, lay.height), (900.0, 600.0));
        assert!(lay.skipped.is_empty() && lay.skipped_ceilings.is_empty());

        // BF16 ridge 989.4 / 3.35 = 295.343 FLOP/byte: log10 = 2.47033,
        // x = 90 + 120 × 3.47033 = 506.44; y = 510 − 90 × (14.99537 − 11) = 150.42.
        let bf16 = &lay.ceilings[0];
        assert_eq!(bf16.index, 0);
        assert!(bf16.highest);
        assert!(close(bf16.ridge_intensity.unwrap(), 295.343));
        assert_xy(bf16.points[0], (506.44, 150.42));
        assert_xy(bf16.points[1], (690.0, 150.42));
        let label = bf16.label.as_ref().unwrap();
        assert_eq!(label.text, "BF16 tensor · 989.4 TFLOP/s");
        assert_xy(label.at, (684.0, 144.42));
        // FP32 ridge 67 / 3.35 = 20: x = 90 + 120 × 2.30103 = 366.12;
        // y = 510 − 90 × (13.82607 − 11) = 255.65.
        let fp32 = &lay.ceilings[1];
        assert!(!fp32.highest);
        assert!(close(fp32.ridge_intensity.unwrap(), 20.0));
        assert_xy(fp32.points[0], (366.12, 255.65));
        assert_xy(fp32.points[1], (690.0, 255.65));

        // Memory slope enters at the left edge (0.1 FLOP/byte -> 3.35e11 FLOP/s,
        // y = 510 − 90 × 0.52504 = 462.75) and stops at the BF16 knee.
        assert_eq!(lay.memory.len(), 2);
        assert_xy(lay.memory[0], (90.0, 462.75));
        assert_xy(lay.memory[1], (506.44, 150.42));

        // GEMM: 800 -> 90 + 120 × 3.90309 = 558.37; 700e12 -> 510 − 90 × 3.84510 = 163.94;
        // most GPU time: radius 24.
        let p = &lay.points;
        assert_eq!(p.len(), 3);
        assert_xy((p[0].x, p[0].y), (558.37, 163.94));
        assert!(close(p[0].radius, 24.0));
        // GEMV: 1 -> 210; 3e12 -> 510 − 90 × 1.47712 = 377.06; radius 24 × √0.2 = 10.73.
        assert_xy((p[1].x, p[1].y), (210.0, 377.06));
        assert!(close(p[1].radius, 10.73));
        // Elementwise: 0.25 -> 90 + 120 × 0.39794 = 137.75; 0.5e12 -> 510 − 90 × 0.69897
        // = 447.09; radius 24 × √0.05 = 5.37.
        assert_xy((p[2].x, p[2].y), (137.75, 447.09));
        assert!(close(p[2].radius, 5.37));
        assert_eq!(FAMILIES[p[2].family].0, "elementwise");

        assert_xy(lay.to_xy(10.0, 3.35e13).unwrap(), (330.0, 282.75));
        assert_eq!(lay.to_xy(0.0, 1.0), None);
        assert_eq!(lay.to_xy(1.0, f64::NAN), None);
    }

    #[test]
    fn roofline_svg_renders_with_resvg() {
        let chart = h100();
        let svg = render_svg(&chart);
        assert!(svg.starts_with("<?xml"));
        assert!(svg.contains(r#"xmlns="http://www.w3.org/2000/svg""#));
        assert!(svg.contains("Arithmetic intensity (FLOP/byte)"));
        assert!(svg.contains("Performance (TFLOP/s)"));
        assert!(svg.contains(">0.1</text>") && svg.contains(">1000</text>"));
        assert!(svg.contains("BF16 tensor · 989.4 TFLOP/s"));
        assert!(svg.contains("FP32 · 67 TFLOP/s"));
        assert!(svg.contains("DRAM 3.35 TB/s"));
        assert!(svg.contains("<title>sm90_xmma_gemm_bf16bf16_bf16f32&#10;GEMM: 800 FLOP/byte, 700 TFLOP/s, GPU time 10 ms</title>"));
        assert_eq!(svg, render_svg(&chart), "deterministic");

        let pixmap = render_png(&svg);
        let _ = std::fs::create_dir_all(concat!(env!("CARGO_MANIFEST_DIR"), "/../target"));
        let _ = std::fs::write(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../target/roofline-test.svg"),
            &svg,
        );
        let _ = pixmap.save_png(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../target/roofline-test.png"
        ));

        // What lies under each centre: the same document without its circles.
        let bare: String = svg
            .lines()
            .filter(|l| !l.starts_with("<circle"))
            .map(|l| format!("{l}\n"))
            .collect();
        let bare = render_png(&bare);
        let lay = layout(&chart);
        let white = (255, 255, 255);
        for pt in &lay.points {
            let fam = FAMILIES[pt.family].1;
            let under = rgb_at(&bare, pt.x, pt.y);
            let want = blend(fam, under);
            assert_rgb_near(
                rgb_at(&pixmap, pt.x, pt.y),
                want,
                &chart.points[pt.index].label,
            );
        }
        // The GEMM and elementwise centres lie on plain background.
        assert_eq!(rgb_at(&bare, lay.points[0].x, lay.points[0].y), white);
        assert_eq!(rgb_at(&bare, lay.points[2].x, lay.points[2].y), white);
        assert_rgb_near(
            rgb_at(&pixmap, lay.points[0].x, lay.points[0].y),
            // 0.6 × (31, 119, 180) + 0.4 × 255
            (121, 173, 210),
            "GEMM over white",
        );
        assert_rgb_near(
            rgb_at(&pixmap, lay.points[2].x, lay.points[2].y),
            // 0.6 × (44, 160, 44) + 0.4 × 255
            (128, 198, 128),
            "elementwise over white",
        );

        // Memory ceiling at 10 FLOP/byte (x 330, y 282.75): pixel (330, 282) lies
        // inside the 2.5-wide line.
        assert_rgb_near(rgb_at(&pixmap, 330.0, 282.0), ROOF_RGB, "memory ceiling");
        // BF16 ceiling at 2000 FLOP/byte (x 606.12), y 150.42.
        assert_rgb_near(rgb_at(&pixmap, 606.12, 150.42), ROOF_RGB, "BF16 ceiling");
        // Above the roof: background.
        assert_eq!(rgb_at(&pixmap, 300.0, 120.0), white);
    }

    /// The highest ceiling's ridge: BF16 989.4 TFLOP/s over 3.35 TB/s is 295.3
    /// FLOP/byte, at x = 90 + 120 x (log10 295.343 + 1) = 506.44; the knee at
    /// y = 510 - 90 x (log10 989.4e12 - 11) = 150.42; a dotted line down to the x axis
    /// (y 510) and its label.
    #[test]
    fn roofline_svg_marks_the_ridge() {
        let svg = render_svg(&h100());
        assert!(
            svg.contains(
                r##"<line x1="506.44" y1="150.42" x2="506.44" y2="510" stroke="#777777" stroke-width="1" stroke-dasharray="2 3"/>"##
            ),
            "{svg}"
        );
        assert!(svg.contains(r##"<text x="510.44" y="504" font-size="11" fill="#777777">ridge 295.3 FLOP/byte</text>"##), "{svg}");
        // Without a memory ceiling there is no ridge to mark.
        let mut chart = h100();
        chart.bandwidth_bytes_per_s = f64::NAN;
        assert!(!render_svg(&chart).contains("ridge "));
    }

    #[test]
    fn roofline_svg_escapes_text() {
        let mut chart = h100();
        chart.title = "a<b>&\"c'".to_string();
        chart.points[0].label = "f<int>&\"x'\u{1}".to_string();
        chart.ceilings[1].label = "<FP32>".to_string();
        let svg = render_svg(&chart);
        assert!(svg.contains("a&lt;b&gt;&amp;&quot;c&apos;"));
        assert!(svg.contains("<title>f&lt;int&gt;&amp;&quot;x&apos;\u{fffd}&#10;"));
        assert!(svg.contains("&lt;FP32&gt; · 67 TFLOP/s"));
        assert!(!svg.contains("<int>") && !svg.contains("<FP32>"));
        render_png(&svg);
    }

    #[test]
    fn roofline_svg_empty_points_draws_axes_and_ceilings() {
        let chart = Chart {
            points: Vec::new(),
            ..h100()
        };
        let lay = layout(&chart);
        // Ridges 20 and 295.3 -> 10^1 .. 10^3; peaks 67e12 .. 989.4e12 -> 10^13 .. 10^16.
        assert_eq!(lay.x_decades, (1, 3));
        assert_eq!(lay.y_decades, (13, 16));
        assert_eq!(lay.ceilings.len(), 2);
        assert_eq!(lay.memory.len(), 2);
        let svg = render_svg(&chart);
        assert!(svg.contains("Arithmetic intensity (FLOP/byte)"));
        assert!(svg.contains("BF16 tensor"));
        assert!(!svg.contains("<circle"));
        assert!(!svg.contains("Kernel family"));
        render_png(&svg);

        // Nothing at all: default ranges, still a valid document.
        let nothing = Chart {
            title: String::new(),
            bandwidth_bytes_per_s: 0.0,
            ceilings: Vec::new(),
            points: Vec::new(),
        };
        let lay = layout(&nothing);
        assert_eq!((lay.x_decades, lay.y_decades), ((-1, 3), (11, 15)));
        assert!(lay.memory.is_empty());
        render_png(&render_svg(&nothing));
    }

    #[test]
    fn roofline_svg_skips_nan_and_non_positive() {
        let mut chart = h100();
        let bad = |intensity: f64, flops: f64| ChartPoint {
            label: "bad".to_string(),
            family: "copy".to_string(),
            intensity,
            flops_per_s: flops,
            gpu_ns: 1,
        };
        chart.points.push(bad(f64::NAN, 1e12));
        chart.points.push(bad(1.0, 0.0));
        chart.points.push(bad(f64::INFINITY, 1e12));
        chart.points.push(bad(-1.0, 1e12));
        chart.ceilings.push(Ceiling {
            label: "broken".to_string(),
            flops_per_s: f64::NAN,
        });
        let lay = layout(&chart);
        assert_eq!(lay.skipped, vec![3, 4, 5, 6]);
        assert_eq!(lay.skipped_ceilings, vec![2]);
        assert_eq!(lay.points.len(), 3);
        assert_eq!((lay.x_decades, lay.y_decades), ((-1, 4), (11, 16)));
        let svg = render_svg(&chart);
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
        assert!(
            !svg.contains(">copy<"),
            "no legend entry for skipped family"
        );
        assert!(svg.contains("4 kernels not plotted"));
        render_png(&svg);
    }

    #[test]
    fn roofline_svg_odd_inputs_stay_sane() {
        // No bandwidth: ceilings span the plot; zero GPU time: minimum radius;
        // unknown family: "other"; extreme values: wide ranges, labels thinned.
        let chart = Chart {
            title: "x".repeat(500),
            bandwidth_bytes_per_s: f64::NAN,
            ceilings: vec![Ceiling {
                label: "peak".to_string(),
                flops_per_s: 1e9,
            }],
            points: vec![
                ChartPoint {
                    label: "tiny".to_string(),
                    family: "mystery".to_string(),
                    intensity: 1e-300,
                    flops_per_s: 5e-324,
                    gpu_ns: 0,
                },
                ChartPoint {
                    label: "huge".to_string(),
                    family: "Attention".to_string(),
                    intensity: 1e300,
                    flops_per_s: f64::MAX,
                    gpu_ns: 0,
                },
            ],
        };
        let lay = layout(&chart);
        assert!(lay.memory.is_empty());
        assert_eq!(lay.ceilings[0].points[0].0, PLOT.x);
        assert_eq!(lay.ceilings[0].ridge_intensity, None);
        assert_eq!(lay.points.len(), 2);
        assert!(lay.points.iter().all(|p| p.radius == MIN_RADIUS));
        assert_eq!(FAMILIES[lay.points[0].family].0, "other");
        assert_eq!(FAMILIES[lay.points[1].family].0, "attention");
        for p in &lay.points {
            assert!(p.x >= PLOT.x && p.x <= PLOT.right());
            assert!(p.y >= PLOT.y && p.y <= PLOT.bottom());
        }
        let svg = render_svg(&chart);
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
        assert!(svg.contains('…'));
        render_png(&svg);
    }

    #[test]
    fn roofline_svg_ceiling_labels_do_not_collide() {
        let ceiling = |label: &str, flops_per_s: f64| Ceiling {
            label: label.to_string(),
            flops_per_s,
        };
        let chart = Chart {
            title: "A100".to_string(),
            bandwidth_bytes_per_s: 2.039e12,
            ceilings: vec![
                ceiling("FP16 tensor", 312e12),
                ceiling("FP32", 19.5e12),
                ceiling("FP64", 9.7e12),
                ceiling("FP64 tensor", 19.5e12),
                ceiling("INT32", 17e12),
            ],
            points: Vec::new(),
        };
        let lay = layout(&chart);
        // Ridges 4.76 .. 153 FLOP/byte: 10^0 .. 10^3; peaks 9.7e12 .. 312e12:
        // 10^12 .. 10^15, 150 units a decade.
        assert_eq!((lay.x_decades, lay.y_decades), ((0, 3), (12, 15)));
        assert_eq!(lay.ceilings.len(), 5);
        assert!(lay.ceilings[0].highest);
        // Equal peaks share the first one's label.
        let fp32 = lay.ceilings[1].label.as_ref().unwrap();
        assert_eq!(fp32.text, "FP32 / FP64 tensor · 19.5 TFLOP/s");
        assert_eq!(lay.ceilings[3].label, None);
        let labels: Vec<&Label> = lay
            .ceilings
            .iter()
            .filter_map(|c| c.label.as_ref())
            .collect();
        assert_eq!(labels.len(), 4);
        for (i, a) in labels.iter().enumerate() {
            assert!(a.bounds.x >= PLOT.x && a.bounds.right() <= PLOT.right());
            assert!(a.bounds.y >= PLOT.y && a.bounds.bottom() <= PLOT.bottom());
            assert!(
                !segment_hits(&a.bounds, lay.memory[0], lay.memory[1]),
                "{}",
                a.text
            );
            for b in &labels[i + 1..] {
                assert!(
                    !rects_overlap(&a.bounds, &b.bounds),
                    "{} / {}",
                    a.text,
                    b.text
                );
            }
        }
        // FP64 has room above its own line.
        let fp64 = &lay.ceilings[2];
        assert_xy(
            fp64.label.as_ref().unwrap().at,
            (684.0, fp64.points[0].1 - 6.0),
        );
        // INT32 lies 9 units under the shared line: a label above it would cross that
        // line, so it goes below its own.
        let int32 = &lay.ceilings[4];
        let (y19, y17) = (lay.ceilings[1].points[0].1, int32.points[0].1);
        assert!(close(y17 - y19, 150.0 * (19.5f64 / 17.0).log10()));
        assert_xy(int32.label.as_ref().unwrap().at, (684.0, y17 + 15.0));
        render_png(&render_svg(&chart));
    }

    #[test]
    fn roofline_svg_number_formats() {
        assert_eq!(num(1.0), "1");
        assert_eq!(num(-0.001), "0");
        assert_eq!(num(150.4165), "150.42");
        assert_eq!(num(f64::NAN), "0");
        assert_eq!(si(989.4e12), "989.4 T");
        assert_eq!(si(3.35e12), "3.35 T");
        assert_eq!(sig(0.25), "0.25");
        assert_eq!(decade_label(3), "1000");
        assert_eq!(decade_label(-1), "0.1");
        assert_eq!(decade_label(-3), "0.001");
        assert_eq!(decade_label(9), "1e9");
        assert_eq!(duration(1_500), "1.5 µs");
        assert_eq!(escape("<&>\"'"), "&lt;&amp;&gt;&quot;&apos;");
    }
}
