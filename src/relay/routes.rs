//! The relay's routes: exactly the request paths of the gateway allow-list for one provider,
//! derived from the catalog's dialect and provider tables (the same derivation that writes
//! `generated/gateway-allow-list.json`), never from a list of the relay's own.

use crate::catalog;

/// The name the report gives the route of a provider the catalog does not list.
pub const UNLISTED: &str = "unlisted_provider";

/// One allowed path and the dialect it speaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// The path, possibly a template with `{…}` segments (fal's `/{model_id}`).
    pub path: &'static str,
    pub dialect: &'static str,
}

/// The routes of `provider`, or of the unlisted-provider route when `None`.
pub fn for_provider(provider: Option<&str>) -> Result<Vec<Route>, String> {
    let accepts: &[&str] = match provider {
        None => catalog::UNLISTED_PROVIDER_ACCEPTS,
        Some(name) => match catalog::PROVIDERS.iter().find(|p| p.name == name) {
            Some(p) => p.accepts,
            None => {
                let known: Vec<&str> = catalog::PROVIDERS.iter().map(|p| p.name).collect();
                return Err(format!("no provider `{name}` in the catalog (it has: {}; omit --provider for the unlisted-provider route)", known.join(", ")));
            }
        },
    };
    Ok(catalog::DIALECTS
        .iter()
        .filter(|d| accepts.contains(&d.name))
        .map(|d| Route { path: d.gateway_path, dialect: d.name })
        .collect())
}

/// The route a request path takes (its query string already removed), if any.
pub fn matching<'r>(routes: &'r [Route], path: &str) -> Option<&'r Route> {
    routes.iter().find(|r| matches_template(r.path, path))
}

/// Whether `path` matches `template`: literally, or, where the template has a `{…}`
/// segment, any non-empty remainder (a fal model id holds slashes: `fal-ai/flux/dev`).
fn matches_template(template: &str, path: &str) -> bool {
    match template.find('{') {
        None => template == path,
        Some(at) => path.len() > at && path.starts_with(&template[..at]),
    }
}

/// Whether the harness entry's declared dialects and the provider's accepted ones meet:
/// the reachability matrix's cell. `None` for an entry that declares no dialect.
pub fn reachable(harness: &catalog::Harness, provider: Option<&str>) -> Option<bool> {
    if harness.dialects.is_empty() {
        return None;
    }
    let routes = for_provider(provider).ok()?;
    Some(harness.dialects.iter().any(|d| routes.iter().any(|r| r.dialect == *d)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_come_from_the_catalog_tables() {
        let unlisted = for_provider(None).expect("unlisted");
        let paths: Vec<&str> = unlisted.iter().map(|r| r.path).collect();
        assert_eq!(paths, ["/v1/messages", "/v1/chat/completions", "/v1/responses"]);
        let anthropic = for_provider(Some("anthropic")).expect("anthropic");
        assert_eq!(anthropic, [Route { path: "/v1/messages", dialect: "anthropic_messages" }]);
        assert!(for_provider(Some("nobody")).is_err());
    }

    #[test]
    fn templates_match_a_remainder_and_literals_match_exactly() {
        let fal = for_provider(Some("fal-ai")).expect("fal");
        assert_eq!(matching(&fal, "/fal-ai/flux/dev").map(|r| r.dialect), Some("fal_queue"));
        assert_eq!(matching(&fal, "/"), None);
        let openai = for_provider(Some("openai")).expect("openai");
        assert_eq!(matching(&openai, "/v1/responses/x"), None);
        assert_eq!(matching(&openai, "/v1/messages"), None);
    }

    #[test]
    fn reachability_is_the_matrix_cell() {
        let claude = catalog::HARNESSES.iter().find(|h| h.name == "claude-code").expect("entry");
        assert_eq!(reachable(claude, Some("openai")), Some(false));
        assert_eq!(reachable(claude, None), Some(true));
        let cursor = catalog::HARNESSES.iter().find(|h| h.name == "cursor").expect("entry");
        assert_eq!(reachable(cursor, None), None);
    }
}
