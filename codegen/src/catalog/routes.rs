//! The model plane's derived facts, derived by one function ([`Routes::new`]) from a
//! compiled catalog, whoever asks for them: each provider's
//! gateway routes (the accepted dialects joined with their paths, read into segments), the
//! unlisted provider's routes, and the reachability matrix of harness entries × providers.
//!
//! Every consumer reads this derivation: the runtime's tables (`rust::tables`), the docs
//! page's dialect and reachability tables, the support snapshot and
//! `generated/gateway-allow-list.json`. None of them joins a provider to a path or decides
//! reachability on its own, so the relay, the page and the allow-list cannot disagree.

use super::gateway::{self, Segment};
use super::model::{Catalog, Dialect, Harness, Name};

/// The name the allow-list, the runtime and the probe's report give the route of a provider
/// the catalog does not list: the catalog's own `[unlisted_provider]` table.
pub const UNLISTED_PROVIDER: &str = "unlisted_provider";

/// One allowed request path and the dialect it speaks.
#[derive(Clone, Debug)]
pub struct Route<'c> {
    pub dialect: &'c Dialect,
    /// The path as the catalog writes it (`/{model_id}`).
    pub path: &'c str,
    /// The path read by the gateway grammar: each placeholder is one whole segment.
    pub segments: Vec<Segment<'c>>,
}

/// A reviewed provider and its routes, in the dialect table's order.
#[derive(Clone, Debug)]
pub struct ProviderRoutes<'c> {
    pub provider: &'c str,
    pub routes: Vec<Route<'c>>,
}

/// One row of the reachability matrix: whether an entry's declared dialects meet what each
/// provider accepts. `None` for an entry that declares no dialect: undeclared is
/// unconstrained, not universal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reachability<'c> {
    pub harness: &'c str,
    /// One cell per reviewed provider, in the catalog's provider order.
    pub providers: Vec<Option<bool>>,
    /// The cell of a provider the catalog does not list.
    pub unlisted: Option<bool>,
}

/// The derivation.
#[derive(Clone, Debug)]
pub struct Routes<'c> {
    /// Catalog dialects in table order: the variants of the runtime's `Dialect` enum.
    pub dialects: &'c [Dialect],
    pub providers: Vec<ProviderRoutes<'c>>,
    pub unlisted: Vec<Route<'c>>,
    /// One row per harness entry, in catalog order.
    pub reachability: Vec<Reachability<'c>>,
}

/// The routes of the dialects named in `accepts`, in the dialect table's order (the order the
/// docs table and the allow-list read). A name that is not a dialect has no route; validation
/// has refused such a catalog already.
fn routes_of<'c>(dialects: &'c [Dialect], accepts: &[Name]) -> Vec<Route<'c>> {
    dialects
        .iter()
        .filter(|d| accepts.contains(&d.name))
        .map(|d| Route { dialect: d, path: d.gateway_path.as_str(), segments: gateway::segments(d.gateway_path.as_str()).collect() })
        .collect()
}

/// Whether a route list serves any of the entry's declared dialects; `None` when it declares
/// none. This is the one reachability rule.
fn cell(h: &Harness, routes: &[Route]) -> Option<bool> {
    if h.dialects.is_empty() {
        return None;
    }
    Some(h.dialects.iter().any(|d| routes.iter().any(|r| r.dialect.name == *d)))
}

impl<'c> Routes<'c> {
    /// Derives every route and cell from a catalog that passed validation.
    pub fn new(c: &'c Catalog) -> Routes<'c> {
        let providers: Vec<ProviderRoutes> =
            c.providers.iter().map(|p| ProviderRoutes { provider: p.name.as_str(), routes: routes_of(&c.dialects, &p.accepts) }).collect();
        let unlisted = routes_of(&c.dialects, &c.unlisted_provider.accepts);
        let reachability = c
            .harnesses
            .iter()
            .map(|h| Reachability {
                harness: h.name.as_str(),
                providers: providers.iter().map(|p| cell(h, &p.routes)).collect(),
                unlisted: cell(h, &unlisted),
            })
            .collect();
        Routes { dialects: &c.dialects, providers, unlisted, reachability }
    }

    /// The matrix cell of the entry at `harness` (catalog order) and a reviewed provider at
    /// `provider` (catalog order).
    pub fn reachable(&self, harness: usize, provider: usize) -> Option<bool> {
        self.reachability.get(harness).and_then(|row| row.providers.get(provider).copied().flatten())
    }
}

/// The CamelCase variant of a dialect name (`openai_chat` → `OpenaiChat`). Validation holds
/// every dialect name to snake_case words (`gateway::dialect_name_problem`), under which no
/// two names give the same variant.
pub fn variant(name: &str) -> String {
    // The one PascalCase of the generator, which also keeps a keyword such as `self` from
    // becoming a variant that does not compile.
    crate::schema::normalize::pascal(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Catalog {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../catalog/catalog.toml")).expect("catalog");
        toml::from_str(&text).expect("parses")
    }

    /// The routes of a reviewed provider, or of the unlisted provider for `None`; `None` for
    /// a name the catalog does not list (never read as unlisted).
    fn provider<'r>(routes: &'r Routes<'_>, name: Option<&str>) -> Option<&'r [Route<'r>]> {
        let Some(name) = name else { return Some(&routes.unlisted) };
        routes.providers.iter().find(|p| p.provider == name).map(|p| p.routes.as_slice())
    }

    #[test]
    fn a_variant_is_the_generators_pascal_case() {
        assert_eq!(variant("openai_chat"), "OpenaiChat");
        assert_eq!(variant("fal_queue"), "FalQueue");
        // A name the dialect rule admits that Rust reserves still names a variant.
        assert_eq!(variant("self"), "SelfDef");
    }

    #[test]
    fn routes_join_accepted_dialects_with_their_paths_in_table_order() {
        let c = catalog();
        let routes = Routes::new(&c);
        let paths = |name| -> Vec<&str> { provider(&routes, name).expect("known").iter().map(|r| r.path).collect() };
        assert_eq!(paths(None), ["/v1/messages", "/v1/chat/completions", "/v1/responses"]);
        assert_eq!(paths(Some("anthropic")), ["/v1/messages"]);
        let fal = provider(&routes, Some("fal-ai")).expect("fal");
        assert_eq!(fal[0].segments, [Segment::Placeholder("model_id")]);
    }

    #[test]
    fn an_unknown_provider_is_refused_not_read_as_unlisted() {
        let c = catalog();
        let routes = Routes::new(&c);
        assert!(provider(&routes, Some("nobody")).is_none());
        assert!(provider(&routes, Some("openai")).is_some() && provider(&routes, None).is_some());
    }

    #[test]
    fn the_matrix_has_a_row_per_entry_and_a_cell_per_provider() {
        let c = catalog();
        let routes = Routes::new(&c);
        assert_eq!(routes.reachability.len(), c.harnesses.len());
        let claude = routes.reachability.iter().find(|r| r.harness == "claude-code").expect("entry");
        let openai = c.providers.iter().position(|p| p.name.as_str() == "openai").expect("openai");
        assert_eq!(claude.providers[openai], Some(false));
        assert_eq!(claude.unlisted, Some(true));
        let cursor = routes.reachability.iter().find(|r| r.harness == "cursor").expect("entry");
        assert_eq!(cursor.unlisted, None);
    }

    #[test]
    fn variants_are_camel_case() {
        assert_eq!(variant("openai_chat"), "OpenaiChat");
        assert_eq!(variant("fal_queue"), "FalQueue");
    }
}
