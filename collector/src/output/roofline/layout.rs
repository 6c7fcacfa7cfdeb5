//! Where everything of a roofline chart goes ([`layout`]): the axes' decades, each
//! point's position and radius, the roof's segments and where each ceiling's label
//! sits without crossing another; [`super::svg`] writes it. Pure functions, no I/O.
//! The rules are the SVG's (see there).

/// One roofline chart: one device's ceilings and the kernels run on it.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// Chart title, e.g. "NVIDIA H100 80GB HBM3 — roofline".
    pub title: String,
    /// DRAM peak bandwidth in bytes/s: the memory ceiling's slope. Not a positive
    /// finite number: no memory ceiling, compute ceilings span the whole plot.
    pub bandwidth_bytes_per_s: f64,
    /// Compute ceilings, one per data type. Ceilings whose peak is not a positive
    /// finite number are skipped.
    pub ceilings: Vec<Ceiling>,
    /// The kernels.
    pub points: Vec<ChartPoint>,
}

/// One compute ceiling.
#[derive(Debug, Clone, PartialEq)]
pub struct Ceiling {
    /// What it is, e.g. "BF16 tensor".
    pub label: String,
    /// Peak in FLOP/s.
    pub flops_per_s: f64,
}

/// One kernel on the chart.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartPoint {
    /// Kernel name (shown in the tooltip; any characters).
    pub label: String,
    /// "GEMM", "attention", "elementwise", "reduction", "copy", "communication" or
    /// "other" (case-insensitive; anything else is drawn as "other").
    pub family: String,
    /// FLOP per DRAM byte.
    pub intensity: f64,
    /// Achieved FLOP/s.
    pub flops_per_s: f64,
    /// Total GPU time of the kernel: the circle's area is proportional to it.
    pub gpu_ns: u64,
}

/// Width of the SVG in user units.
pub const WIDTH: f64 = 900.0;
/// Height of the SVG in user units.
pub const HEIGHT: f64 = 600.0;
/// The plot rectangle: axes, grid, roof and points live inside it (circles may
/// overhang by their radius).
pub const PLOT: Rect = Rect {
    x: 90.0,
    y: 60.0,
    width: 600.0,
    height: 450.0,
};
/// Smallest circle radius, in user units.
pub const MIN_RADIUS: f64 = 3.0;
/// Radius of the circle of the kernel with the most GPU time.
pub const MAX_RADIUS: f64 = 24.0;
/// Fill opacity of the circles.
pub const POINT_OPACITY: f64 = 0.6;
/// Colour of the memory ceiling and of the highest compute ceiling.
pub const ROOF_RGB: (u8, u8, u8) = (0x33, 0x33, 0x33);
/// Colour of the lower (dashed) compute ceilings.
pub const LOWER_CEILING_RGB: (u8, u8, u8) = (0x77, 0x77, 0x77);
/// Colour of the decade grid lines.
pub const GRID_RGB: (u8, u8, u8) = (0xdd, 0xdd, 0xdd);
/// Stroke width of the roof lines.
pub(super) const ROOF_WIDTH: f64 = 2.5;

/// Kernel families in legend order, with their colours.
pub const FAMILIES: [(&str, (u8, u8, u8)); 7] = [
    ("GEMM", (0x1f, 0x77, 0xb4)),
    ("attention", (0x94, 0x67, 0xbd)),
    ("elementwise", (0x2c, 0xa0, 0x2c)),
    ("reduction", (0xff, 0x7f, 0x0e)),
    ("copy", (0x8c, 0x56, 0x4b)),
    ("communication", (0xd6, 0x27, 0x28)),
    ("other", (0x7f, 0x7f, 0x7f)),
];

/// Margin, in decades, between the extreme values and the edge of the axis range.
const MARGIN_DECADES: f64 = 0.1;

/// A rectangle in SVG user units (y grows downwards).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    /// Left edge.
    pub x: f64,
    /// Top edge.
    pub y: f64,
    /// Width.
    pub width: f64,
    /// Height.
    pub height: f64,
}

impl Rect {
    /// Right edge.
    pub fn right(&self) -> f64 {
        self.x + self.width
    }
    /// Bottom edge.
    pub fn bottom(&self) -> f64 {
        self.y + self.height
    }
}

/// Where a kernel is drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct PointLayout {
    /// Index into [`Chart::points`].
    pub index: usize,
    /// Centre x.
    pub x: f64,
    /// Centre y.
    pub y: f64,
    /// Radius.
    pub radius: f64,
    /// Index into [`FAMILIES`] of the colour used.
    pub family: usize,
}

/// Where a compute ceiling is drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct CeilingLayout {
    /// Index into [`Chart::ceilings`].
    pub index: usize,
    /// Peak / bandwidth in FLOP/byte; `None` without a memory ceiling.
    pub ridge_intensity: Option<f64>,
    /// The horizontal segment: from the ridge point (or the plot's left edge without
    /// a memory ceiling) to the plot's right edge.
    pub points: Vec<(f64, f64)>,
    /// Whether this is the highest ceiling (drawn solid; the others are dashed).
    pub highest: bool,
    /// Its label, or `None` when the label is shown with another ceiling of the same
    /// peak (drawn at the same height).
    pub label: Option<Label>,
}

/// A one-line text label of 12-unit sans-serif, right-aligned.
#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    /// The text (not escaped).
    pub text: String,
    /// Where the text ends (x) and its baseline (y).
    pub at: (f64, f64),
    /// Its estimated extent.
    pub bounds: Rect,
}

/// Where everything is drawn, in SVG user units.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// Width of the document.
    pub width: f64,
    /// Height of the document.
    pub height: f64,
    /// The plot rectangle.
    pub plot: Rect,
    /// The x axis spans 10^lo ..= 10^hi FLOP/byte.
    pub x_decades: (i32, i32),
    /// The y axis spans 10^lo ..= 10^hi FLOP/s.
    pub y_decades: (i32, i32),
    /// The memory ceiling's visible part, from where it enters the plot to the highest
    /// ceiling's ridge point (or where it leaves the plot): empty when there is no
    /// valid bandwidth or it does not cross the plot.
    pub memory: Vec<(f64, f64)>,
    /// The drawable compute ceilings, in [`Chart::ceilings`] order.
    pub ceilings: Vec<CeilingLayout>,
    /// Indices into [`Chart::ceilings`] of ceilings not drawn (peak not positive finite).
    pub skipped_ceilings: Vec<usize>,
    /// The drawn kernels, in [`Chart::points`] order.
    pub points: Vec<PointLayout>,
    /// Indices into [`Chart::points`] of kernels not drawn (intensity or performance
    /// not positive finite).
    pub skipped: Vec<usize>,
}

impl Layout {
    /// Where (intensity FLOP/byte, flops FLOP/s) lands; `None` unless both are positive
    /// finite numbers. Values outside the axis ranges land outside the plot.
    pub fn to_xy(&self, intensity: f64, flops: f64) -> Option<(f64, f64)> {
        if !positive(intensity) || !positive(flops) {
            return None;
        }
        Some((self.x_of(intensity.log10()), self.y_of(flops.log10())))
    }

    /// x of a log10 intensity.
    pub(super) fn x_of(&self, log_x: f64) -> f64 {
        let (lo, hi) = self.x_decades;
        self.plot.x + (log_x - f64::from(lo)) / f64::from(hi - lo) * self.plot.width
    }

    /// y of a log10 performance.
    pub(super) fn y_of(&self, log_y: f64) -> f64 {
        let (lo, hi) = self.y_decades;
        self.plot.bottom() - (log_y - f64::from(lo)) / f64::from(hi - lo) * self.plot.height
    }

    /// User units per decade along x and y.
    pub(super) fn per_decade(&self) -> (f64, f64) {
        (
            self.plot.width / f64::from(self.x_decades.1 - self.x_decades.0),
            self.plot.height / f64::from(self.y_decades.1 - self.y_decades.0),
        )
    }
}

fn positive(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

/// Whole decades holding `values` (positive finite) with a margin; `default` if none.
fn decades(values: &[f64], default: (i32, i32)) -> (i32, i32) {
    let mut min = f64::INFINITY;
    let mut max = f64::NEG_INFINITY;
    for &v in values {
        let l = v.log10();
        min = min.min(l);
        max = max.max(l);
    }
    if !min.is_finite() || !max.is_finite() {
        return default;
    }
    // log10 of a positive finite f64 lies within about ±324: the casts are exact.
    let lo = (min - MARGIN_DECADES).floor() as i32;
    let hi = (max + MARGIN_DECADES).ceil() as i32;
    (lo, hi.max(lo + 1))
}

fn family_index(family: &str) -> usize {
    FAMILIES
        .iter()
        .position(|(name, _)| name.eq_ignore_ascii_case(family.trim()))
        .unwrap_or(FAMILIES.len() - 1)
}

/// The RGB colour of a family's circles (before opacity).
pub fn family_rgb(family: &str) -> (u8, u8, u8) {
    FAMILIES[family_index(family)].1
}

/// Where everything of `chart` is drawn.
pub fn layout(chart: &Chart) -> Layout {
    let bandwidth = Some(chart.bandwidth_bytes_per_s).filter(|b| positive(*b));

    let mut skipped_ceilings = Vec::new();
    let mut valid_ceilings = Vec::new();
    for (i, c) in chart.ceilings.iter().enumerate() {
        if positive(c.flops_per_s) {
            valid_ceilings.push(i);
        } else {
            skipped_ceilings.push(i);
        }
    }
    let mut skipped = Vec::new();
    let mut valid_points = Vec::new();
    for (i, p) in chart.points.iter().enumerate() {
        if positive(p.intensity) && positive(p.flops_per_s) {
            valid_points.push(i);
        } else {
            skipped.push(i);
        }
    }

    let ridge = |flops: f64| bandwidth.map(|b| flops / b).filter(|r| positive(*r));

    let mut xs = Vec::new();
    let mut ys = Vec::new();
    for &i in &valid_points {
        xs.push(chart.points[i].intensity);
        ys.push(chart.points[i].flops_per_s);
    }
    for &i in &valid_ceilings {
        let f = chart.ceilings[i].flops_per_s;
        ys.push(f);
        if let Some(r) = ridge(f) {
            xs.push(r);
        }
    }
    let x_decades = decades(&xs, (-1, 3));
    let y_decades = decades(&ys, (11, 15));

    let mut lay = Layout {
        width: WIDTH,
        height: HEIGHT,
        plot: PLOT,
        x_decades,
        y_decades,
        memory: Vec::new(),
        ceilings: Vec::new(),
        skipped_ceilings,
        points: Vec::new(),
        skipped,
    };

    let top = valid_ceilings
        .iter()
        .copied()
        .max_by(|&a, &b| {
            chart.ceilings[a]
                .flops_per_s
                .total_cmp(&chart.ceilings[b].flops_per_s)
                // Among equal peaks, the first listed.
                .then(b.cmp(&a))
        })
        .map(|i| (i, chart.ceilings[i].flops_per_s));

    // The memory slope, clipped to the plot, up to the highest ceiling's knee.
    if let Some(b) = bandwidth {
        let lb = b.log10();
        let (xlo, xhi) = (f64::from(x_decades.0), f64::from(x_decades.1));
        let (ylo, yhi) = (f64::from(y_decades.0), f64::from(y_decades.1));
        let start = xlo.max(ylo - lb);
        let mut end = xhi.min(yhi - lb);
        if let Some(knee) = top.and_then(|(_, f)| ridge(f)) {
            end = end.min(knee.log10());
        }
        if start < end {
            lay.memory = vec![
                (lay.x_of(start), lay.y_of(start + lb)),
                (lay.x_of(end), lay.y_of(end + lb)),
            ];
        }
    }

    // Compute ceilings, then their labels.
    let top_index = top.map(|(t, _)| t);
    for &i in &valid_ceilings {
        let f = chart.ceilings[i].flops_per_s;
        let y = lay.y_of(f.log10());
        let r = ridge(f);
        let x0 = r.map_or(PLOT.x, |r| lay.x_of(r.log10()));
        lay.ceilings.push(CeilingLayout {
            index: i,
            ridge_intensity: r,
            points: vec![(x0, y), (PLOT.right(), y)],
            highest: top_index == Some(i),
            label: None,
        });
    }
    place_ceiling_labels(chart, &mut lay);

    let max_ns = valid_points
        .iter()
        .map(|&i| chart.points[i].gpu_ns)
        .max()
        .unwrap_or(0);
    for &i in &valid_points {
        let p = &chart.points[i];
        let (x, y) = (
            lay.x_of(p.intensity.log10()),
            lay.y_of(p.flops_per_s.log10()),
        );
        let share = if max_ns == 0 {
            0.0
        } else {
            p.gpu_ns as f64 / max_ns as f64
        };
        lay.points.push(PointLayout {
            index: i,
            x,
            y,
            radius: (MAX_RADIUS * share.sqrt()).max(MIN_RADIUS),
            family: family_index(&p.family),
        });
    }
    lay
}

/// Estimated advance of one character of 12-unit sans-serif text.
const LABEL_CHAR_WIDTH: f64 = 6.3;

/// Extent of right-aligned 12-unit text ending at `end_x` on `baseline`.
fn label_bounds(end_x: f64, baseline: f64, text: &str) -> Rect {
    let width = text.chars().count() as f64 * LABEL_CHAR_WIDTH;
    Rect {
        x: end_x - width,
        y: baseline - 10.0,
        width,
        height: 13.0,
    }
}

pub(super) fn rects_overlap(a: &Rect, b: &Rect) -> bool {
    a.x < b.right() && b.x < a.right() && a.y < b.bottom() && b.y < a.bottom()
}

/// Whether the segment from `p` to `q` passes through `r` (Liang–Barsky clipping).
pub(super) fn segment_hits(r: &Rect, p: (f64, f64), q: (f64, f64)) -> bool {
    let (dx, dy) = (q.0 - p.0, q.1 - p.1);
    let mut t0: f64 = 0.0;
    let mut t1: f64 = 1.0;
    for (den, num) in [
        (-dx, p.0 - r.x),
        (dx, r.right() - p.0),
        (-dy, p.1 - r.y),
        (dy, r.bottom() - p.1),
    ] {
        if den == 0.0 {
            if num < 0.0 {
                return false;
            }
        } else {
            let t = num / den;
            if den < 0.0 {
                t0 = t0.max(t);
            } else {
                t1 = t1.min(t);
            }
        }
    }
    t0 <= t1
}

/// Labels each ceiling at the right end of its line, above it when that is free,
/// else below it, so labels cross neither the memory slope, nor other ceilings, nor
/// each other where avoidable. Ceilings drawn at the same height share one label.
fn place_ceiling_labels(chart: &Chart, lay: &mut Layout) {
    let mut order: Vec<usize> = (0..lay.ceilings.len()).collect();
    order.sort_by(|&a, &b| {
        let (ca, cb) = (&lay.ceilings[a], &lay.ceilings[b]);
        ca.points[0]
            .1
            .total_cmp(&cb.points[0].1)
            .then(ca.index.cmp(&cb.index))
    });
    let end_x = lay.plot.right() - 6.0;
    let mut placed: Vec<Rect> = Vec::new();
    let mut g = 0;
    while g < order.len() {
        let first = order[g];
        let y = lay.ceilings[first].points[0].1;
        let mut members = vec![first];
        while g + members.len() < order.len()
            && (lay.ceilings[order[g + members.len()]].points[0].1 - y).abs() < 0.5
        {
            members.push(order[g + members.len()]);
        }
        g += members.len();

        let names: Vec<String> = members
            .iter()
            .map(|&m| truncate(&chart.ceilings[lay.ceilings[m].index].label, 40))
            .collect();
        let flops = chart.ceilings[lay.ceilings[first].index].flops_per_s;
        let text = truncate(&format!("{} · {}FLOP/s", names.join(" / "), si(flops)), 90);

        let free = |b: &Rect| {
            b.x >= lay.plot.x
                && b.y >= lay.plot.y + 1.0
                && b.bottom() <= lay.plot.bottom() - 1.0
                && !placed.iter().any(|p| rects_overlap(p, b))
                && !lay.memory.windows(2).any(|w| segment_hits(b, w[0], w[1]))
                && !lay.ceilings.iter().any(|c| {
                    let [(x0, cy), (x1, _)] = c.points[..] else {
                        return false;
                    };
                    (cy - y).abs() >= 0.5
                        && cy >= b.y - 1.0
                        && cy <= b.bottom() + 1.0
                        && x0 < b.right()
                        && x1 > b.x
                })
        };
        let above = label_bounds(end_x, y - 6.0, &text);
        let below = label_bounds(end_x, y + 15.0, &text);
        let baseline = if free(&above) {
            y - 6.0
        } else if free(&below) {
            y + 15.0
        } else {
            (y - 6.0).max(lay.plot.y + 11.0)
        };
        let bounds = label_bounds(end_x, baseline, &text);
        placed.push(bounds);
        lay.ceilings[first].label = Some(Label {
            text,
            at: (end_x, baseline),
            bounds,
        });
    }
}

/// At most `max` characters, with an ellipsis when cut.
pub(super) fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// A value with up to four significant digits, trailing zeros removed.
pub(super) fn sig(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    if v == 0.0 {
        return "0".to_string();
    }
    let mag = v.abs().log10().floor();
    if !(-6.0..=6.0).contains(&mag) {
        return format!("{v:.3e}");
    }
    let decimals = (3.0 - mag).clamp(0.0, 9.0) as usize;
    let mut s = format!("{v:.decimals$}");
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    s
}

/// A value with an SI prefix, e.g. "989.4 T" for 989.4e12.
pub(super) fn si(v: f64) -> String {
    const PREFIXES: [(f64, &str); 6] = [
        (1e18, "E"),
        (1e15, "P"),
        (1e12, "T"),
        (1e9, "G"),
        (1e6, "M"),
        (1e3, "k"),
    ];
    for (scale, p) in PREFIXES {
        if v.abs() >= scale {
            return format!("{} {p}", sig(v / scale));
        }
    }
    format!("{} ", sig(v))
}
