//! An image reference pinned by digest: `[REGISTRY/]REPOSITORY[:TAG]@sha256:<64 hex>`.
//!
//! The image lane runs immutable images only, so a reference without a digest is refused
//! before anything starts, with a message naming what is wrong. The grammar is the
//! distribution project's reference grammar (the one docker, podman, buildah and skopeo
//! share): the registry is the first `/`-separated component when it contains `.` or `:` or
//! is `localhost`; the repository is lowercase alphanumeric components separated by `.`,
//! `_`, `__` or runs of `-`, joined by `/`.
//!
//! The types are oci-spec's: [`ImageReference`] is a thin newtype over its
//! `distribution::Reference` that enforces the pin, and [`Digest`] is its digest, which the
//! lane builds and accepts for sha256 only ([`sha256_digest`], [`digest_of`]). The lane's own
//! checks stay in front of oci-spec's parsers because they refuse what those accept and
//! name what is wrong (see [`ImageReference`]).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use oci_spec::distribution::{ParseError, Reference};

/// The longest repository name (registry included) the distribution grammar allows.
const MAX_NAME_LEN: usize = 255;
/// The longest tag the grammar allows (`[\w][\w.-]{0,127}`).
const MAX_TAG_LEN: usize = 128;

/// oci-spec's digest. The lane uses it for sha256 digests only (see [`sha256_digest`]).
pub use oci_spec::image::Digest;
use oci_spec::image::DigestAlgorithm;

/// Parses `sha256:<64 lowercase hex>` into oci-spec's [`Digest`].
///
/// oci-spec's own parser accepts any algorithm (sha512, or a name it does not know) and
/// says only that a digest is invalid. The lane accepts sha256 alone, because a digest
/// names a blob under `blobs/sha256/` and is checked with `sha2`, and its refusals say what
/// is wrong; so the checks below come first, and oci-spec's parser last.
pub fn sha256_digest(text: &str) -> Result<Digest, ReferenceError> {
    let Some((algorithm, hex)) = text.split_once(':') else {
        return Err(ReferenceError::DigestFormat(text.to_owned()));
    };
    if DigestAlgorithm::from(algorithm) != DigestAlgorithm::Sha256 {
        return Err(ReferenceError::DigestAlgorithm(algorithm.to_owned()));
    }
    if hex.len() != 64 {
        return Err(ReferenceError::DigestLength(hex.len()));
    }
    if let Some(bad) = hex.chars().find(|c| !matches!(c, '0'..='9' | 'a'..='f')) {
        return Err(ReferenceError::DigestCharacter(bad));
    }
    text.parse().map_err(|_| ReferenceError::DigestFormat(text.to_owned()))
}

/// Whether `digest` is one the lane uses: sha256 (whose value oci-spec has checked to be
/// 64 lowercase hex digits, so it is a plain file name under `blobs/sha256/`).
pub fn is_sha256(digest: &Digest) -> bool {
    *digest.algorithm() == DigestAlgorithm::Sha256
}

/// The sha256 digest of `bytes`.
pub fn digest_of(bytes: &[u8]) -> Digest {
    use sha2::Digest as _;
    digest_from_sha256(sha2::Sha256::digest(bytes).into())
}

/// The sha256 digest whose value is `raw`.
pub fn digest_from_sha256(raw: [u8; 32]) -> Digest {
    let mut text = String::with_capacity(71);
    text.push_str("sha256:");
    for byte in raw {
        text.push_str(&format!("{byte:02x}"));
    }
    // 64 lowercase hex digits after `sha256:` are a digest by oci-spec's grammar, whatever
    // the bytes; this cannot fail.
    text.parse().expect("sha256: and 64 lowercase hex digits are a digest")
}

/// A reference pinned by digest: oci-spec's [`Reference`], which the lane accepts only with
/// a sha256 digest and keeps as given.
///
/// oci-spec's parser alone is not enough here: it accepts a reference without a digest
/// (defaulting the tag to `latest`, which can move), any digest algorithm and uppercase
/// hex, a port of any length, and it has no bracketed IPv6 host (the lane's `[::1]`
/// loopback registry). Its errors do not say which part is wrong. So a reference passes
/// the lane's own checks, which name what is wrong, and then oci-spec's grammar.
///
/// The reference is kept as given, not normalized to `docker.io/library/…`: what the
/// report prints and the retest repeats is what the user wrote, and the tools apply the
/// same default. A reference with both a tag and a digest (`name:tag@sha256:…`) is
/// accepted, as the distribution grammar allows, but the tag is ignored for pulling: the
/// digest alone says what runs ([`ImageReference::pull_name`] leaves the tag out), so a tag
/// that moved since cannot change the image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageReference {
    /// The registry is empty when the reference names none (the tools' default, Docker
    /// Hub); the digest is [`ImageReference::digest`]'s text.
    reference: Reference,
    digest: Digest,
}

/// Why a reference was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceError {
    #[error("the image reference is empty; give NAME@sha256:<64 hex>")]
    Empty,
    /// `name:tag` without `@sha256:…`.
    #[error(
        "`{name}:{tag}` names a tag, not a digest: a tag can move, so pin the image as {name}@sha256:<64 hex> \
         (the digest `skopeo inspect` or the registry reports)"
    )]
    TagWithoutDigest { name: String, tag: String },
    /// A name without `@sha256:…`.
    #[error("`{0}` has no digest: pin the image as {0}@sha256:<64 hex>")]
    NoDigest(String),
    /// The part after `@` is not `ALGORITHM:VALUE`.
    #[error("the digest `{0}` is not sha256:<64 hex>")]
    DigestFormat(String),
    #[error("the digest algorithm `{0}` is not supported: only sha256 digests are accepted")]
    DigestAlgorithm(String),
    #[error("a sha256 digest has 64 hex digits, this one has {0}")]
    DigestLength(usize),
    #[error("a sha256 digest is lowercase hex (0-9, a-f); it holds {0:?}")]
    DigestCharacter(char),
    #[error("the image reference has an empty repository name")]
    EmptyRepository,
    /// A repository component outside the grammar: the component, and why.
    #[error("the repository component `{component}` is invalid: {reason}")]
    InvalidRepository { component: String, reason: &'static str },
    #[error("the repository name is {0} bytes long; at most {MAX_NAME_LEN} are allowed")]
    NameTooLong(usize),
    #[error("the tag `{0}` is invalid: letters, digits, `_`, `.` and `-`, not starting with `.` or `-`, at most 128")]
    InvalidTag(String),
    #[error("the registry `{0}` is not HOST[:PORT]")]
    InvalidRegistry(String),
    /// What the lane's checks let through and oci-spec's grammar did not: its reason.
    #[error("`{reference}` is not an image reference: {reason}")]
    Grammar { reference: String, reason: String },
}

impl ImageReference {
    /// Parses a reference; see the type's documentation for what is accepted.
    pub fn parse(text: &str) -> Result<ImageReference, ReferenceError> {
        if text.is_empty() {
            return Err(ReferenceError::Empty);
        }
        let (name_and_tag, digest) = match text.split_once('@') {
            Some((name, digest)) => (name, Some(digest)),
            None => (text, None),
        };
        // The tag is after the last `:` that follows the last `/` (a registry's port is
        // before a `/`).
        let last_slash = name_and_tag.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match name_and_tag[last_slash..].rfind(':') {
            Some(i) => (&name_and_tag[..last_slash + i], Some(&name_and_tag[last_slash + i + 1..])),
            None => (name_and_tag, None),
        };
        let Some(digest) = digest else {
            return Err(match tag {
                Some(tag) => ReferenceError::TagWithoutDigest { name: name.to_owned(), tag: tag.to_owned() },
                None => ReferenceError::NoDigest(name.to_owned()),
            });
        };
        let digest = sha256_digest(digest)?;
        if let Some(tag) = tag {
            check_tag(tag)?;
        }
        if name.len() > MAX_NAME_LEN {
            return Err(ReferenceError::NameTooLong(name.len()));
        }
        let (registry, repository) = match name.split_once('/') {
            Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => (Some(first), rest),
            _ => (None, name),
        };
        if let Some(registry) = registry {
            check_registry(registry)?;
        }
        check_repository(repository)?;
        let reference = with_oci_grammar(text, registry, repository, tag, &digest)?;
        Ok(ImageReference { reference, digest })
    }

    /// The registry (`HOST[:PORT]`), when the reference names one (otherwise the tools'
    /// default, Docker Hub).
    pub fn registry(&self) -> Option<&str> {
        Some(self.reference.registry()).filter(|r| !r.is_empty())
    }

    pub fn repository(&self) -> &str {
        self.reference.repository()
    }

    /// The tag given with the digest; never used to pull.
    pub fn tag(&self) -> Option<&str> {
        self.reference.tag()
    }

    pub fn digest(&self) -> &Digest {
        &self.digest
    }

    /// oci-spec's reference, as given (with an empty registry when none was named).
    pub fn as_oci(&self) -> &Reference {
        &self.reference
    }

    /// `[REGISTRY/]REPOSITORY@sha256:…`, without the tag: what is pulled.
    pub fn pull_name(&self) -> String {
        self.reference.clone_with_digest(self.digest.to_string()).to_string()
    }

    /// Whether the registry is this machine's loopback (`localhost`, `127.0.0.0/8` or
    /// `[::1]`, with or without a port): the only registries the lane talks plain HTTP to.
    pub fn is_loopback_registry(&self) -> bool {
        self.loopback_registry_address().is_some()
    }

    /// Where the registry is reached when it is this machine's loopback; `None` for any
    /// other ([`loopback_address`]).
    pub fn loopback_registry_address(&self) -> Option<SocketAddr> {
        self.registry().and_then(loopback_address)
    }
}

/// oci-spec's reading of a reference the lane's checks passed, holding the parts as given.
///
/// Its grammar has no bracketed IPv6 host, so such a registry is read as `localhost` (a
/// host it accepts in the same place) and put back afterwards; the lane has checked it.
fn with_oci_grammar(
    text: &str,
    registry: Option<&str>,
    repository: &str,
    tag: Option<&str>,
    digest: &Digest,
) -> Result<Reference, ReferenceError> {
    let stand_in = match registry {
        Some(host) if host.starts_with('[') => text.replacen(host, "localhost", 1),
        _ => text.to_owned(),
    };
    // Its repository is normalized (`busybox` becomes `library/busybox` under
    // `docker.io`); the lane keeps the one given, which this grammar accepted.
    stand_in
        .parse::<Reference>()
        .map_err(|reason: ParseError| ReferenceError::Grammar { reference: text.to_owned(), reason: reason.to_string() })?;
    let registry = registry.unwrap_or_default().to_owned();
    Ok(match tag {
        Some(tag) => Reference::with_tag_and_digest(registry, repository.to_owned(), tag.to_owned(), digest.to_string()),
        None => Reference::with_digest(registry, repository.to_owned(), digest.to_string()),
    })
}

/// Where a loopback registry (`localhost`, `127.0.0.0/8` or `[::1]`, with an optional port;
/// port 80 without one, as plain HTTP) is reached; `None` for any other.
pub(super) fn loopback_address(registry: &str) -> Option<SocketAddr> {
    let (host, port) = match registry.strip_prefix('[') {
        Some(bracketed) => {
            let (inside, after) = bracketed.split_once(']')?;
            (IpAddr::V6(inside.parse::<Ipv6Addr>().ok()?), after)
        }
        None => {
            let (host, after) = registry.find(':').map_or((registry, ""), |i| registry.split_at(i));
            let ip = match host {
                "localhost" => IpAddr::V4(Ipv4Addr::LOCALHOST),
                other => IpAddr::V4(other.parse::<Ipv4Addr>().ok()?),
            };
            (ip, after)
        }
    };
    let port = match port.strip_prefix(':') {
        Some(digits) => digits.parse::<u16>().ok()?,
        None if port.is_empty() => 80,
        None => return None,
    };
    host.is_loopback().then_some(SocketAddr::new(host, port))
}

impl fmt::Display for ImageReference {
    /// The reference as given, tag included.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.reference.fmt(f)
    }
}

impl std::str::FromStr for ImageReference {
    type Err = ReferenceError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        ImageReference::parse(text)
    }
}

fn check_tag(tag: &str) -> Result<(), ReferenceError> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let valid = tag.len() <= MAX_TAG_LEN && tag.chars().next().is_some_and(word) && tag.chars().all(|c| word(c) || c == '.' || c == '-');
    if valid {
        Ok(())
    } else {
        Err(ReferenceError::InvalidTag(tag.to_owned()))
    }
}

/// `HOST[:PORT]`: a domain name (labels of letters, digits and inner `-`), an IPv4 address
/// (which is a domain name by that rule), or a bracketed IPv6 address.
fn check_registry(registry: &str) -> Result<(), ReferenceError> {
    let invalid = || ReferenceError::InvalidRegistry(registry.to_owned());
    let (host_ok, port) = match registry.strip_prefix('[') {
        Some(bracketed) => {
            let (inside, after) = bracketed.split_once(']').ok_or_else(invalid)?;
            let port = match after {
                "" => None,
                _ => Some(after.strip_prefix(':').ok_or_else(invalid)?),
            };
            (inside.parse::<Ipv6Addr>().is_ok(), port)
        }
        None => {
            let (host, port) = match registry.split_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (registry, None),
            };
            let label = |l: &str| {
                !l.is_empty() && !l.starts_with('-') && !l.ends_with('-') && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            };
            (host.split('.').all(label), port)
        }
    };
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()));
    if host_ok && port_ok {
        Ok(())
    } else {
        Err(invalid())
    }
}

/// Components of `[a-z0-9]+` joined by `.`, `_`, `__` or `-`+, themselves joined by `/`.
fn check_repository(repository: &str) -> Result<(), ReferenceError> {
    if repository.is_empty() {
        return Err(ReferenceError::EmptyRepository);
    }
    for component in repository.split('/') {
        let invalid = |reason| Err(ReferenceError::InvalidRepository { component: component.to_owned(), reason });
        if component.is_empty() {
            return invalid("empty (a doubled, leading or trailing `/`)");
        }
        if let Some(c) = component.chars().find(|c| !matches!(c, 'a'..='z' | '0'..='9' | '.' | '_' | '-')) {
            return if c.is_ascii_uppercase() {
                invalid("repository names are lowercase")
            } else {
                invalid("only lowercase letters, digits, `.`, `_`, `__` and `-` are allowed")
            };
        }
        let bytes = component.as_bytes();
        if !bytes[0].is_ascii_alphanumeric() || !bytes[bytes.len() - 1].is_ascii_alphanumeric() {
            return invalid("it must start and end with a letter or digit");
        }
        // Separators between alphanumeric runs: `.`, `_`, `__`, or any run of `-`.
        for separator in component.split(|c: char| c.is_ascii_alphanumeric()).filter(|s| !s.is_empty()) {
            let ok = separator == "." || separator == "_" || separator == "__" || separator.bytes().all(|b| b == b'-');
            if !ok {
                return invalid("separators are `.`, `_`, `__` or dashes, one at a time");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn refused(text: &str) -> String {
        ImageReference::parse(text).expect_err(text).to_string()
    }

    #[test]
    fn accepted_references() {
        let r = ImageReference::parse(&format!("busybox@sha256:{HEX}")).unwrap();
        assert_eq!((r.registry(), r.repository(), r.tag()), (None, "busybox", None));
        assert_eq!(r.digest().digest(), HEX);
        assert!(!r.is_loopback_registry());

        let r = ImageReference::parse(&format!("127.0.0.1:5000/team/app_x__y.z--w:v1.2@sha256:{HEX}")).unwrap();
        assert_eq!((r.registry(), r.repository(), r.tag()), (Some("127.0.0.1:5000"), "team/app_x__y.z--w", Some("v1.2")));
        assert_eq!(r.pull_name(), format!("127.0.0.1:5000/team/app_x__y.z--w@sha256:{HEX}"), "the tag is not pulled");
        assert_eq!(r.to_string(), format!("127.0.0.1:5000/team/app_x__y.z--w:v1.2@sha256:{HEX}"));

        let r = ImageReference::parse(&format!("ghcr.io/org/tool@sha256:{HEX}")).unwrap();
        assert_eq!(r.registry(), Some("ghcr.io"));
        // Without `.`/`:`, and not `localhost`, the first component is part of the repository.
        let r = ImageReference::parse(&format!("library/busybox@sha256:{HEX}")).unwrap();
        assert_eq!((r.registry(), r.repository()), (None, "library/busybox"));
    }

    #[test]
    fn the_reference_is_oci_specs_kept_as_given() {
        let r = ImageReference::parse(&format!("busybox:1.36@sha256:{HEX}")).unwrap();
        assert_eq!((r.as_oci().registry(), r.as_oci().repository(), r.as_oci().tag()), ("", "busybox", Some("1.36")));
        assert_eq!(r.as_oci().digest(), Some(r.digest().as_ref()));
        assert_eq!(r.pull_name(), format!("busybox@sha256:{HEX}"));
        let r = ImageReference::parse(&format!("[::1]:5000/app@sha256:{HEX}")).unwrap();
        assert_eq!((r.registry(), r.to_string()), (Some("[::1]:5000"), format!("[::1]:5000/app@sha256:{HEX}")));
        // What the lane's checks pass and oci-spec's grammar refuses: a Docker Hub name
        // that is over 255 bytes once oci-spec puts it under `library/`.
        let long = "a".repeat(250);
        assert_eq!(
            refused(&format!("{long}@sha256:{HEX}")),
            format!("`{long}@sha256:{HEX}` is not an image reference: repository name must not be more than 255 characters")
        );
    }

    #[test]
    fn digests_are_oci_specs_and_sha256_only() {
        let digest = sha256_digest(&format!("sha256:{HEX}")).unwrap();
        assert!(is_sha256(&digest));
        assert_eq!((digest.digest(), digest.to_string()), (HEX, format!("sha256:{HEX}")));
        assert_eq!(digest_of(b""), sha256_digest("sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855").unwrap());
        let sha512: Digest = format!("sha512:{HEX}{HEX}").parse().expect("oci-spec accepts sha512");
        assert!(!is_sha256(&sha512));
        assert_eq!(
            sha256_digest(sha512.as_ref()).unwrap_err().to_string(),
            "the digest algorithm `sha512` is not supported: only sha256 digests are accepted"
        );
    }

    #[test]
    fn loopback_registries() {
        for registry in ["localhost", "localhost:5000", "127.0.0.1", "127.0.0.1:5000", "127.1.2.3:80", "[::1]", "[::1]:5000"] {
            let r = ImageReference::parse(&format!("{registry}/app@sha256:{HEX}")).unwrap();
            assert!(r.is_loopback_registry(), "{registry}");
        }
        for registry in ["example.com", "10.0.0.1:5000", "localhost.example.com", "[::2]:5000", "128.0.0.1"] {
            let r = ImageReference::parse(&format!("{registry}/app@sha256:{HEX}")).unwrap();
            assert!(!r.is_loopback_registry(), "{registry}");
        }
    }

    #[test]
    fn refusals_name_what_is_wrong() {
        assert_eq!(refused(""), "the image reference is empty; give NAME@sha256:<64 hex>");
        assert!(refused("busybox:1.36").starts_with("`busybox:1.36` names a tag, not a digest"), "{}", refused("busybox:1.36"));
        assert!(refused("localhost:5000/app:v1").contains("pin the image as localhost:5000/app@sha256:<64 hex>"));
        assert_eq!(
            refused("localhost:5000/app"),
            "`localhost:5000/app` has no digest: pin the image as localhost:5000/app@sha256:<64 hex>"
        );
        assert_eq!(
            refused(&format!("app@sha512:{HEX}{HEX}")),
            "the digest algorithm `sha512` is not supported: only sha256 digests are accepted"
        );
        assert_eq!(refused(&format!("app@sha256:{}", &HEX[1..])), "a sha256 digest has 64 hex digits, this one has 63");
        assert_eq!(refused(&format!("app@sha256:{HEX}0")), "a sha256 digest has 64 hex digits, this one has 65");
        assert_eq!(refused(&format!("app@sha256:{}", HEX.to_uppercase())), "a sha256 digest is lowercase hex (0-9, a-f); it holds 'A'");
        assert_eq!(refused(&format!("app@sha256:{}g", &HEX[1..])), "a sha256 digest is lowercase hex (0-9, a-f); it holds 'g'");
        assert_eq!(refused(&format!("app@{HEX}")), format!("the digest `{HEX}` is not sha256:<64 hex>"));
        assert_eq!(refused(&format!("@sha256:{HEX}")), "the image reference has an empty repository name");
        assert_eq!(refused(&format!("localhost/@sha256:{HEX}")), "the image reference has an empty repository name");
        assert_eq!(
            refused(&format!("Busybox@sha256:{HEX}")),
            "the repository component `Busybox` is invalid: repository names are lowercase"
        );
        assert_eq!(
            refused(&format!("a//b@sha256:{HEX}")),
            "the repository component `` is invalid: empty (a doubled, leading or trailing `/`)"
        );
        assert_eq!(
            refused(&format!("app$@sha256:{HEX}")),
            "the repository component `app$` is invalid: only lowercase letters, digits, `.`, `_`, `__` and `-` are allowed"
        );
        assert_eq!(
            refused(&format!("-app@sha256:{HEX}")),
            "the repository component `-app` is invalid: it must start and end with a letter or digit"
        );
        assert_eq!(
            refused(&format!("a___b@sha256:{HEX}")),
            "the repository component `a___b` is invalid: separators are `.`, `_`, `__` or dashes, one at a time"
        );
        assert_eq!(
            refused(&format!("a._b@sha256:{HEX}")),
            "the repository component `a._b` is invalid: separators are `.`, `_`, `__` or dashes, one at a time"
        );
        assert!(refused(&format!("{}@sha256:{HEX}", "a".repeat(256))).contains("256 bytes long"));
        assert!(refused(&format!("app:.bad@sha256:{HEX}")).starts_with("the tag `.bad` is invalid"));
        assert_eq!(refused(&format!("bad_host.x:port/app@sha256:{HEX}")), "the registry `bad_host.x:port` is not HOST[:PORT]");
    }
}
