//! The renderers: each reads only the [`model`](super::model) and writes one format.

mod audit;
mod audit_charts;
mod audit_grid;
mod behind;
pub mod cases;
mod chart;
mod escape;
mod history;
mod html;
mod junit;
mod markdown;
mod metrics;
mod older;
mod page;
#[cfg(test)]
mod proptests;
mod rates;
pub mod remedy;
mod sections;
mod step_summary;
mod table;
mod verdict_grid;
mod verdict_words;

// The renderers name the model's types as their parent's (`super::Check`).
use super::model::*;

pub use audit::{audit_markdown, render_audit_table};
pub use audit_charts::audit_chart_titles;
pub use behind::fell_behind;
pub use history::{Comparison, compare, rebuild_index, run_label, trend_key};
pub use html::{chart_titles, render_html};
pub use junit::{JunitError, render_junit};
pub use markdown::render_markdown;
pub use metrics::render_metrics;
pub use sections::{Section, experiment_sections, sections};
pub use sections::{markdown as sections_markdown, text as sections_text};
pub use step_summary::render_step_summary;
pub use table::render_table;
pub use verdict_words::summary as verdict_summary;
