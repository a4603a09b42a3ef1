//! `plot_series`: one or more series of `[x, y]` points drawn as a PNG line chart.
//!
//! Built with `plotters` without any font backend, so the PNG has axes, a grid and coloured
//! lines but **no text**: the title, axis label, legend (label → colour) and axis ranges come
//! back in the JSON next to the image instead.

use base64::Engine as _;
use covo_core::catalog;
use plotters::prelude::*;
use serde_json::{json, Value};

use super::PlotConfig;
use covo_core::error::ToolError;

pub(super) const TOOL: &str = catalog::media::PLOT_SERIES.name;

/// Line colours, in series order (cycled).
const PALETTE: [(u8, u8, u8); 8] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
];

#[derive(Debug)]
pub(super) struct Plot {
    width: u32,
    height: u32,
}

/// The kind of the x values, which must agree across every series.
#[derive(Debug, Clone, Copy, PartialEq)]
enum XKind {
    /// Plain numbers.
    Number,
    /// RFC 3339 timestamps, plotted as Unix seconds.
    Time,
}

struct Series {
    label: String,
    points: Vec<(f64, f64)>,
}

impl Plot {
    pub(super) fn new(cfg: &PlotConfig) -> Plot {
        Plot {
            width: cfg.width.unwrap_or(800).clamp(64, 4096),
            height: cfg.height.unwrap_or(480).clamp(64, 4096),
        }
    }

    pub(super) fn run(&self, args: &Value) -> Result<Value, ToolError> {
        let (series, x_kind) = parse(args)?;
        let points: usize = series.iter().map(|s| s.points.len()).sum();
        let (x0, x1) = range(series.iter().flat_map(|s| s.points.iter().map(|p| p.0)));
        let (y0, y1) = range(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
        let png = self
            .render(&series, (x0, x1), (y0, y1))
            .map_err(|e| ToolError::failed(TOOL, format!("rendering failed: {e}")))?;
        let legend: Vec<Value> = series
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let (r, g, b) = PALETTE[i % PALETTE.len()];
                json!({"label": s.label, "color": format!("#{r:02x}{g:02x}{b:02x}"), "points": s.points.len()})
            })
            .collect();
        let x_range = match x_kind {
            XKind::Number => json!([x0, x1]),
            XKind::Time => json!([rfc3339(x0), rfc3339(x1)]),
        };
        Ok(json!({
            "artifact": {
                "content_type": "image/png",
                "bytes_base64": base64::engine::general_purpose::STANDARD.encode(&png),
                "width": self.width,
                "height": self.height,
            },
            "series": series.len(),
            "points": points,
            "text_in_image": false,
            "title": args.get("title"),
            "y_label": args.get("y_label"),
            "legend": legend,
            "x_kind": match x_kind { XKind::Number => "number", XKind::Time => "time" },
            "x_range": x_range,
            "y_range": [y0, y1],
        }))
    }

    fn render(
        &self,
        series: &[Series],
        x: (f64, f64),
        y: (f64, f64),
    ) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
        let (w, h) = (self.width, self.height);
        let mut rgb = vec![0u8; w as usize * h as usize * 3];
        {
            let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
            root.fill(&WHITE)?;
            let margin = (w.min(h) / 20).max(4);
            let mut chart = ChartBuilder::on(&root)
                .margin(margin)
                .build_cartesian_2d(x.0..x.1, y.0..y.1)?;
            chart
                .configure_mesh()
                .x_labels(10)
                .y_labels(8)
                .x_label_formatter(&|_| String::new())
                .y_label_formatter(&|_| String::new())
                .draw()?;
            for (i, s) in series.iter().enumerate() {
                let (r, g, b) = PALETTE[i % PALETTE.len()];
                let style = RGBColor(r, g, b).stroke_width(2);
                chart.draw_series(LineSeries::new(s.points.iter().copied(), style))?;
            }
            root.present()?;
        }
        let mut png = Vec::new();
        let mut enc = png::Encoder::new(&mut png, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header()?;
        writer.write_image_data(&rgb)?;
        writer.finish()?;
        Ok(png)
    }
}

fn parse(args: &Value) -> Result<(Vec<Series>, XKind), ToolError> {
    let items = args
        .get("series")
        .and_then(Value::as_array)
        .ok_or_else(|| ToolError::invalid(TOOL, "/series", "expected an array of series"))?;
    if items.is_empty() {
        return Err(ToolError::invalid(
            TOOL,
            "/series",
            "give at least one series",
        ));
    }
    let mut kind: Option<XKind> = None;
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Some(points) = item.get("points").and_then(Value::as_array) else {
            let why = if item.get("sensor").is_some() {
                "the peer has no sensor history: pass the readings as points"
            } else {
                "each series needs points ([x, y] pairs)"
            };
            return Err(ToolError::invalid(
                TOOL,
                &format!("/series/{i}/points"),
                why,
            ));
        };
        if points.is_empty() {
            return Err(ToolError::invalid(
                TOOL,
                &format!("/series/{i}/points"),
                "no points",
            ));
        }
        let mut pts = Vec::with_capacity(points.len());
        for (j, p) in points.iter().enumerate() {
            let at = format!("/series/{i}/points/{j}");
            let (xv, yv) = match p.as_array().map(Vec::as_slice) {
                Some([xv, yv]) => (xv, yv),
                _ => return Err(ToolError::invalid(TOOL, &at, "expected an [x, y] pair")),
            };
            let (x, k) = if let Some(x) = xv.as_f64() {
                (x, XKind::Number)
            } else if let Some(t) = xv.as_str() {
                let t = chrono::DateTime::parse_from_rfc3339(t).map_err(|e| {
                    ToolError::invalid(
                        TOOL,
                        &format!("{at}/0"),
                        format!("not a number or RFC 3339 time: {e}"),
                    )
                })?;
                (t.timestamp_millis() as f64 / 1000.0, XKind::Time)
            } else {
                return Err(ToolError::invalid(
                    TOOL,
                    &format!("{at}/0"),
                    "expected a number or an RFC 3339 time",
                ));
            };
            match kind {
                None => kind = Some(k),
                Some(prev) if prev != k => {
                    return Err(ToolError::invalid(
                        TOOL,
                        &format!("{at}/0"),
                        "x values mix numbers and times",
                    ))
                }
                _ => {}
            }
            let y = yv.as_f64().filter(|y| y.is_finite()).ok_or_else(|| {
                ToolError::invalid(TOOL, &format!("{at}/1"), "expected a finite number")
            })?;
            pts.push((x, y));
        }
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let label = item
            .get("label")
            .or_else(|| item.get("sensor"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("series {}", i + 1));
        out.push(Series { label, points: pts });
    }
    Ok((out, kind.unwrap_or(XKind::Number)))
}

/// The min and max of `values`, widened when they are equal so the axis is never empty.
fn range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if lo < hi {
        (lo, hi)
    } else {
        let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.05 };
        (lo - pad, hi + pad)
    }
}

fn rfc3339(secs: f64) -> Value {
    chrono::DateTime::from_timestamp_millis((secs * 1000.0).round() as i64)
        .map(|t| Value::String(t.to_rfc3339()))
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(out: &Value) -> (png::OutputInfo, Vec<u8>) {
        let b64 = out["artifact"]["bytes_base64"].as_str().unwrap();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        let mut reader = png::Decoder::new(std::io::Cursor::new(bytes))
            .read_info()
            .unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        buf.truncate(info.buffer_size());
        (info, buf)
    }

    #[test]
    fn two_series_render_as_a_png_that_decodes_at_the_stated_size() {
        let plot = Plot::new(&PlotConfig::default());
        let out = plot
            .run(&json!({"title": "temps", "series": [
                {"label": "inside", "points": [[0, 20.5], [1, 21.0], [2, 22.5]]},
                {"label": "outside", "points": [[0, 5], [1, 4], [2, 7], [3, 6]]}
            ]}))
            .unwrap();
        assert_eq!(out["series"], 2);
        assert_eq!(out["points"], 7);
        assert_eq!(out["artifact"]["content_type"], "image/png");
        let (info, pixels) = decode(&out);
        assert_eq!((info.width, info.height), (800, 480));
        assert_eq!(out["artifact"]["width"], 800);
        // The first series' colour is actually drawn.
        let blue = pixels.chunks(3).filter(|p| p == &[31, 119, 180]).count();
        assert!(blue > 50, "only {blue} pixels of the first series' colour");
        assert_eq!(out["legend"][1]["label"], "outside");
        assert_eq!(out["y_range"], json!([4.0, 22.5]));
    }

    #[test]
    fn time_strings_are_plotted_and_reported_as_times() {
        let plot = Plot::new(&PlotConfig {
            width: Some(200),
            height: Some(100),
        });
        let out = plot
            .run(&json!({"series": [{"sensor": "bme280", "points": [
                ["2026-01-01T00:00:00Z", 1.0], ["2026-01-01T01:00:00Z", 2.0]
            ]}]}))
            .unwrap();
        assert_eq!(out["x_kind"], "time");
        assert_eq!(out["x_range"][0], "2026-01-01T00:00:00+00:00");
        assert_eq!(out["legend"][0]["label"], "bme280");
        assert_eq!(decode(&out).0.width, 200);
    }

    #[test]
    fn a_single_point_still_renders() {
        let out = Plot::new(&PlotConfig::default())
            .run(&json!({"series": [{"points": [[5, 5]]}]}))
            .unwrap();
        assert_eq!(out["points"], 1);
        decode(&out);
    }

    #[test]
    fn a_sensor_name_without_points_is_an_argument_error_pointing_at_points() {
        let err = Plot::new(&PlotConfig::default())
            .run(&json!({"series": [{"sensor": "bme280", "window": "24h"}]}))
            .unwrap_err();
        match err {
            ToolError::InvalidArguments { problems, .. } => {
                assert_eq!(problems[0].path, "/series/0/points");
                assert!(problems[0].problem.contains("sensor history"));
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn mixed_numbers_and_times_are_refused() {
        let err = Plot::new(&PlotConfig::default())
            .run(&json!({"series": [{"points": [[1, 1], ["2026-01-01T00:00:00Z", 2]]}]}))
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }));
    }

    #[test]
    fn a_non_numeric_value_is_refused_with_its_path() {
        let err = Plot::new(&PlotConfig::default())
            .run(&json!({"series": [{"points": [[1, "hot"]]}]}))
            .unwrap_err();
        assert_eq!(
            err,
            ToolError::invalid(TOOL, "/series/0/points/0/1", "expected a finite number")
        );
    }
}
