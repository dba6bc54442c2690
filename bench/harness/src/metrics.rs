//! The API server's `apiserver_request_total`: every client's requests, by verb and resource.

use std::collections::BTreeMap;

use kube::Client;

use crate::Error;

/// `apiserver_request_total` samples: labels and value.
pub type Metric = Vec<(BTreeMap<String, String>, f64)>;

pub async fn scrape(client: &Client) -> Result<Metric, Error> {
    let request = kube::core::Request::new("").get("metrics", &Default::default())?;
    let text = client.request_text(request).await?;
    let mut samples = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let mut map = BTreeMap::new();
        for pair in labels.split("\",") {
            if let Some((k, v)) = pair.split_once("=\"") {
                map.insert(k.to_string(), v.trim_end_matches('"').to_string());
            }
        }
        samples.push((map, value.trim().parse()?));
    }
    Ok(samples)
}

pub fn by_metric_verb(metric: &Metric) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for (labels, value) in metric {
        *out.entry(labels.get("verb").cloned().unwrap_or_default())
            .or_default() += value;
    }
    out
}

pub fn metric_writes(metric: &Metric) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for (labels, value) in metric {
        let verb = labels.get("verb").map(String::as_str).unwrap_or_default();
        if [
            "POST",
            "PUT",
            "PATCH",
            "APPLY",
            "DELETE",
            "DELETECOLLECTION",
        ]
        .contains(&verb)
        {
            let label = |k: &str| labels.get(k).map(String::as_str).unwrap_or_default();
            let resource = match label("subresource") {
                "" => label("resource").to_string(),
                sub => format!("{}/{sub}", label("resource")),
            };
            *out.entry(format!("{verb} {resource}")).or_default() += value;
        }
    }
    out
}
