//! Logs go to stderr as JSON lines in the shape go-plugin understands
//! (`@level`, `@message`, fields), so Terraform files them under the
//! provider's name and filters them with `TF_LOG` / `TF_LOG_PROVIDER`.

use std::fmt;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// Installs the stderr logger. The level comes from `TF_LOG_PROVIDER`, then
/// `TF_LOG`; without either, only warnings and errors are written (Terraform
/// discards plugin output then anyway).
pub fn init() {
    let level = ["TF_LOG_PROVIDER", "TF_LOG"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
        .map(|v| match v.to_ascii_lowercase().as_str() {
            "trace" => Level::TRACE,
            "debug" => Level::DEBUG,
            "info" | "json" => Level::INFO,
            "error" => Level::ERROR,
            _ => Level::WARN,
        })
        .unwrap_or(Level::WARN);
    let filter = tracing_subscriber::filter::Targets::new()
        .with_target("hct", level)
        .with_default(Level::WARN.min(level));
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let _ = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .event_format(HclogJson),
        )
        .with(filter)
        .try_init();
}

/// One JSON object per event: `{"@level":"info","@message":"…","@module":"hct.…",…fields}`.
struct HclogJson;

impl<S, N> FormatEvent<S, N> for HclogJson
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let metadata = event.metadata();
        let mut fields = JsonFields(serde_json::Map::new());
        event.record(&mut fields);
        let mut line = serde_json::Map::new();
        line.insert("@level".into(), level_name(*metadata.level()).into());
        line.insert(
            "@timestamp".into(),
            humantime::format_rfc3339_micros(std::time::SystemTime::now())
                .to_string()
                .into(),
        );
        line.insert(
            "@message".into(),
            fields.0.remove("message").unwrap_or_else(|| "".into()),
        );
        line.insert(
            "@module".into(),
            metadata.target().replace("::", ".").into(),
        );
        line.extend(fields.0);
        writeln!(writer, "{}", serde_json::Value::Object(line))
    }
}

fn level_name(level: Level) -> &'static str {
    match level {
        Level::TRACE => "trace",
        Level::DEBUG => "debug",
        Level::INFO => "info",
        Level::WARN => "warn",
        Level::ERROR => "error",
    }
}

struct JsonFields(serde_json::Map<String, serde_json::Value>);

impl Visit for JsonFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), value.into());
    }

    // Integers as text: Terraform reads JSON numbers as float64 and would
    // print server id 5000001 as 5.000001e+06.
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), value.to_string().into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), value.to_string().into());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().into(), format!("{value:?}").into());
    }
}
