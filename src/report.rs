//! `armada report`: a finished sweep's curves and final table as one self-contained HTML
//! file, readable offline from disk. It is the dashboard's own page with its style, its
//! scripts and the sweep's views (computed from `summary.parquet` and `final.parquet` by
//! [`crate::page::views`]) inlined, so the report and the live page draw the same.

use crate::page::{self, views};
use crate::results;
use anyhow::{bail, Context};
use serde_json::json;
use std::path::{Path, PathBuf};

/// The report's file name in the sweep directory.
pub const REPORT_FILE: &str = "report.html";

/// Write the report of the sweep in `sweep_dir` to `out` (default `sweep_dir/report.html`,
/// atomically); returns its path.
pub fn write_report(sweep_dir: &Path, out: Option<&Path>) -> anyhow::Result<PathBuf> {
    let summary_path = sweep_dir.join(results::SUMMARY_FILE);
    if !summary_path.is_file() {
        bail!(
            "{} not found: a report is made from a sweep's summary files (`armada run` writes them; \
             `armada summarize {}` rebuilds them from the trajectories)",
            summary_path.display(),
            sweep_dir.display()
        );
    }
    let last = results::read_parquet(&sweep_dir.join(results::FINAL_FILE))?;
    let family = last
        .column("family")
        .ok()
        .and_then(|c| c.str().ok().and_then(|s| s.get(0).map(str::to_owned)))
        .unwrap_or_default();
    // A family declared at run time is not in this build: its metrics come sorted.
    let registry = crate::registry();
    let headline = registry.family(&family).map_or(&[][..], |f| f.headline_metrics());
    // The summary is read a piece at a time: a sweep of any length reports in bounded memory.
    let tables = views::sweep_tables_of(sweep_dir, headline)?;
    let n_cells = tables.final_table.as_ref().map_or(0, |t| t.rows.len());
    let sweep = crate::results::file_name(sweep_dir);
    let comparisons = views::comparisons_of(sweep_dir)?.map(|(rows, total)| json!({ "rows": rows, "total": total }));
    let data = json!({
        "sweep": sweep,
        "family": family,
        "generated": format!("report of {sweep}: {n_cells} cells, from {}", summary_path.display()),
        "views": {
            "source": "files", "n_cells": n_cells, "n_exact": n_cells,
            "metrics": tables.metrics, "final": tables.final_table, "curves": tables.curves,
            "comparisons": comparisons,
        },
    });
    let html = page(&serde_json::to_string(&data)?)?;
    let out = out.map_or_else(|| sweep_dir.join(REPORT_FILE), Path::to_path_buf);
    let tmp = out.with_extension("html.tmp");
    std::fs::write(&tmp, html).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &out).with_context(|| format!("writing {}", out.display()))?;
    Ok(out)
}

/// The dashboard's page with its assets and `data` (JSON) inlined.
pub fn page(data: &str) -> anyhow::Result<String> {
    // In a <script> element, `</script` ends it whatever the quotes: JSON allows `\/`.
    let data = data.replace("</", "<\\/").replace("<!--", "<\\!--");
    let mut html = page::INDEX_HTML.to_string();
    let inlined = [
        (r#"<link rel="stylesheet" href="/assets/style.css">"#, format!("<style>\n{}</style>", page::STYLE_CSS)),
        (r#"<script src="/assets/chart.js"></script>"#, format!("<script>\n{}</script>", page::CHART_JS)),
        (
            r#"<script src="/assets/app.js"></script>"#,
            format!("<script>window.ARMADA_REPORT = {data};</script>\n<script>\n{}</script>", page::APP_JS),
        ),
    ];
    for (tag, inline) in inlined {
        if !html.contains(tag) {
            bail!("the dashboard page no longer has `{tag}`: the report cannot inline it");
        }
        html = html.replace(tag, &inline);
    }
    Ok(html)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_inlines_every_asset_and_refers_to_nothing_outside() {
        let html = page(r#"{"x": "</script><!-- y"}"#).unwrap();
        assert!(!html.contains("/assets/"), "an asset is still referenced");
        assert!(!html.contains("src=") && !html.contains("href=\"http"), "an external reference");
        assert!(html.contains(page::CHART_JS) && html.contains(page::APP_JS));
        assert!(html.contains(r#"window.ARMADA_REPORT = {"x": "<\/script><\!-- y"};"#));
        // The data cannot end its own script element.
        assert_eq!(html.matches("</script>").count(), 3);
    }
}
