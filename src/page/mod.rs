//! What the dashboard and the offline report draw: one HTML page with its script and style
//! (`assets/`, compiled into the binary: no CDN, no build step), and the sweep's views
//! ([`views`]) it is given as JSON. The dashboard serves them live
//! ([`crate::coordinator::surface::dashboard`]); `armada report` inlines them into one file
//! ([`crate::report`]). Both read the summary tables only, so neither the report nor the
//! views depend on the coordinator.

pub mod views;

pub const INDEX_HTML: &str = include_str!("assets/index.html");
pub const APP_JS: &str = include_str!("assets/app.js");
pub const CHART_JS: &str = include_str!("assets/chart.js");
pub const STYLE_CSS: &str = include_str!("assets/style.css");
