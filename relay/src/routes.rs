//! The relay's routes: exactly the gateway routes the generated catalog tables give one
//! provider (`catalog::GATEWAY_ROUTES`, the derivation that also writes
//! `generated/gateway-allow-list.json`), never a join or a list of the relay's own.

use checkfu_wire::catalog::{self, Route};

/// The routes of `provider`, or of the unlisted-provider route when `None`. An unknown name
/// is refused with the known ones, as everywhere the catalog is read.
pub fn for_provider(provider: Option<&str>) -> Result<&'static [Route], RouteError> {
    catalog::gateway_routes(provider).map_err(RouteError)
}

/// A provider the catalog does not have, refused with the ones it has and the way to the
/// unlisted-provider route.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}; omit --provider for the unlisted-provider route")]
pub struct RouteError(pub catalog::UnknownProvider);

/// The route a request path takes (its query string already removed), if any.
pub fn matching<'r>(routes: &'r [Route], path: &str) -> Option<&'r Route> {
    routes.iter().find(|r| r.matches(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use checkfu_wire::catalog::{Dialect, Segment};

    #[test]
    fn routes_are_the_generated_tables_and_an_unknown_provider_is_refused() {
        assert_eq!(for_provider(None).expect("unlisted"), catalog::UNLISTED_PROVIDER_ROUTES);
        for provider in catalog::GATEWAY_ROUTES {
            assert_eq!(for_provider(Some(provider.provider)).expect("listed"), provider.routes);
        }
        let refused = for_provider(Some("nobody")).expect_err("unknown").to_string();
        assert!(refused.contains("no provider `nobody`") && refused.contains("omit --provider"), "{refused}");
    }

    #[test]
    fn literals_match_exactly() {
        let openai = for_provider(Some("openai")).expect("openai");
        assert_eq!(matching(openai, "/v1/responses").map(|r| r.dialect), Some(Dialect::OpenaiResponses));
        assert_eq!(matching(openai, "/v1/responses/x"), None);
        assert_eq!(matching(openai, "/v1/responses/"), None);
        assert_eq!(matching(openai, "/v1/messages"), None);
        assert_eq!(matching(openai, "v1/responses"), None);
    }

    #[test]
    fn a_placeholder_matches_one_whole_non_empty_segment() {
        let segments = &[Segment::Literal("v1"), Segment::Placeholder("id"), Segment::Literal("run")];
        let route = [Route { dialect: Dialect::FalQueue, path: "/v1/{id}/run", segments }];
        assert!(matching(&route, "/v1/abc/run").is_some());
        assert!(matching(&route, "/v1/x").is_none(), "a placeholder is not the rest of the path");
        assert!(matching(&route, "/v1//run").is_none());
        assert!(matching(&route, "/v1/a/b/run").is_none());
        assert!(matching(&route, "/v1/abc/run/more").is_none());
        // fal's `/{model_id}` takes one segment: a model id with slashes is not on the list.
        let fal = for_provider(Some("fal-ai")).expect("fal");
        assert_eq!(matching(fal, "/flux").map(|r| r.dialect), Some(Dialect::FalQueue));
        assert_eq!(matching(fal, "/fal-ai/flux/dev"), None);
        assert_eq!(matching(fal, "/"), None);
    }
}
