//! [`Deferred`]: how a generated type holds the rest of a long chain or cycle of
//! definitions (the generator decides where: `rust::indirection`).

use std::fmt;
use std::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// A value of the generated type `T`, held as the JSON it was decoded from (already
/// checked against `T`'s schema) and turned into a `T` when asked ([`Deferred::decode`]).
///
/// A type that holds the next definition, which holds the next, a thousand deep, is a
/// thousand nested types to rustc: proving them `Sized` (E0275), collecting their
/// drop-check rules (E0320), and instantiating their drop glue, `Deserialize` and
/// `Serialize` one inside the other each run past its recursion limit, and raising the
/// limit overflows rustc's own stack. `Deferred<T>` nests no `T`: it is a `Value` (kept
/// exact: numbers keep their texts) with a marker, so each stretch of the chain compiles on
/// its own. Nothing is lost: the check has already judged the value, and `decode` reads it.
pub struct Deferred<T> {
    value: Value,
    /// `fn() -> T`: names `T` without owning one, so drop check and auto traits ignore it.
    of: PhantomData<fn() -> T>,
}

impl<T> Deferred<T> {
    /// The JSON held.
    pub fn json(&self) -> &Value {
        &self.value
    }

    pub fn into_json(self) -> Value {
        self.value
    }
}

impl<T: DeserializeOwned> Deferred<T> {
    /// The value as its generated type.
    pub fn decode(&self) -> Result<T, serde_json::Error> {
        T::deserialize(&self.value)
    }
}

impl<T: Serialize> Deferred<T> {
    /// Holds `value` (encoded now, as it would be written).
    pub fn new(value: &T) -> Result<Self, serde_json::Error> {
        Ok(Deferred { value: serde_json::to_value(value)?, of: PhantomData })
    }
}

impl<T> Clone for Deferred<T> {
    fn clone(&self) -> Self {
        Deferred { value: self.value.clone(), of: PhantomData }
    }
}

impl<T> PartialEq for Deferred<T> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<T> fmt::Debug for Deferred<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

impl<T> Serialize for Deferred<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(serializer)
    }
}

impl<'de, T> Deserialize<'de> for Deferred<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(|value| Deferred { value, of: PhantomData })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize, Serialize, Debug, PartialEq)]
    struct Pair {
        a: u8,
        b: Vec<String>,
    }

    #[test]
    fn it_holds_the_json_and_decodes_it_when_asked() {
        let held: Deferred<Pair> = serde_json::from_str(r#"{"a": 1, "b": ["x"]}"#).expect("JSON");
        assert_eq!(held.decode().expect("a Pair"), Pair { a: 1, b: vec!["x".into()] });
        assert_eq!(serde_json::to_string(&held).expect("JSON"), r#"{"a":1,"b":["x"]}"#);
        assert_eq!(held.clone(), Deferred::new(&Pair { a: 1, b: vec!["x".into()] }).expect("encodes"));
        let wrong: Deferred<Pair> = serde_json::from_str(r#"{"a": "no"}"#).expect("any JSON is held");
        assert!(wrong.decode().is_err(), "decoding is where a mismatch shows");
    }
}
