//! The numeric bounds of the profile, in one place.
//!
//! Every bound is a named constant so that the README, the messages and the
//! tests quote the same number. Each value is chosen so that a schema an agent
//! author would realistically write fits with room to spare, while the work a
//! validator (or a constrained decoder that compiles the schema into a grammar)
//! may spend on a hostile schema stays small and predictable.

/// Largest accepted document, in bytes of UTF-8.
///
/// A hand-written agent output schema with dozens of fields is 2 to 8 KiB;
/// 32 KiB leaves four times that and is small enough that one schema can ride
/// in a `session/new` request without becoming the dominant cost of it. It is
/// also the bound that makes every other walk in this crate cheap: nothing
/// below ever looks at more than this many bytes.
pub const MAX_DOCUMENT_BYTES: usize = 32 * 1024;

/// Deepest accepted nesting of JSON values (the root is at depth 0).
///
/// Each nested schema costs one or two JSON levels (`properties` + name,
/// `items`, `anyOf` + index), so 32 levels hold about 15 nested schemas, more
/// than the 10 levels of object nesting that hosted structured-output APIs
/// publish. It is far below serde_json's own parse recursion limit of 128, so
/// a document that serde_json refuses for depth is always one this profile
/// refuses too, and recursive consumers of the schema stay shallow.
pub const MAX_DEPTH: usize = 32;

/// Largest accepted number of schemas (objects or booleans in schema
/// position), counted as written, before any reference is followed.
///
/// A realistic agent output schema has 20 to 200 subschemas. 1024 bounds the
/// size of every table a validator builds per schema node.
pub const MAX_SCHEMAS: usize = 1024;

/// Largest accepted number of combinator branches: each subschema under
/// `allOf`, `anyOf`, `oneOf`, `not`, `if`, `then`, `else`, `dependentSchemas`
/// (and legacy `dependencies`).
///
/// Branches are where validation work multiplies: `oneOf` must try every
/// branch, and a constrained decoder turns each branch into an alternative of
/// its grammar. Nullable fields written as `anyOf: [T, {"type": "null"}]` cost
/// two branches each, so 128 allows 60 such fields.
pub const MAX_COMBINATOR_BRANCHES: usize = 128;

/// Largest accepted size of the schema once every `$ref` is inlined, in
/// schemas, with each reference counted at every place it is used.
///
/// This is the size a consumer that expands references (a grammar compiler,
/// a code generator, a naive validator) would produce. Eight times
/// [`MAX_SCHEMAS`] admits ordinary reuse of shared definitions and refuses
/// the doubling chains ("reference bombs") whose expansion grows as 2^n.
pub const MAX_EXPANDED_SCHEMAS: u64 = 8 * MAX_SCHEMAS as u64;

/// Largest accepted upper bound of a counted repetition `{m,n}` or `{n}` in a
/// `pattern` or `patternProperties` key.
///
/// A backtracking engine spends up to this many steps per start position on
/// one repetition, and an automaton engine builds this many copies of the
/// repeated atom. Lengths beyond a few hundred characters belong in
/// `maxLength`, which every validator checks in constant work per character.
pub const MAX_PATTERN_REPETITION: u32 = 256;

/// Largest accepted amount of distinct pattern text (all `pattern` values and
/// `patternProperties` keys, each distinct string counted once), in bytes.
///
/// Every distinct pattern is a regex a validator must compile and keep, the
/// most expensive thing a single keyword can ask for, and parsing it is the
/// largest cost of this linter too (about 60 ns per byte). A schema with 40
/// patterns of 100 characters fits; a document made of patterns does not.
pub const MAX_PATTERN_TEXT_BYTES: usize = 4096;

/// Nesting limit handed to the pattern parser.
///
/// Groups are outside the subset anyway; the limit only keeps the parser's own
/// work small on `((((…))))` while still letting ordinary grouped patterns
/// parse, so that they are reported as groups rather than as syntax errors.
pub const PATTERN_NEST_LIMIT: u32 = 64;
