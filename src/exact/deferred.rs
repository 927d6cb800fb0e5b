//! [`Deferred`]: how a generated type holds the rest of a long chain or cycle of
//! definitions (the generator decides where: `rust::plan::indirection`).

use std::fmt;
use std::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// A value of the generated type `T`, held as the JSON it was decoded from (already
/// checked against `T`'s schema) and turned into a `T` when asked ([`Held::decode`]).
///
/// A type that holds the next definition, which holds the next, a thousand deep, is a
/// thousand nested types to rustc: proving them `Sized` (E0275), collecting their
/// drop-check rules (E0320), and instantiating their drop glue, `Deserialize` and
/// `Serialize` one inside the other each run past its recursion limit, and raising the
/// limit overflows rustc's own stack. A `Deferred<T>` is a `Value` (kept exact: numbers
/// keep their texts) with a marker, so each stretch of the chain compiles on its own.
/// Nothing is lost: the check has already judged the value, and `decode` reads it.
///
/// It is an alias, not a struct generic over `T`, because of debug info. With full debug
/// info (`debug = 2`, the dev profile's default) rustc describes every type a function
/// uses, and a generic struct's description lists its type arguments, each described in
/// turn, fields and all, one inside the other (`build_struct_type_di_node` recursing
/// through `build_generic_type_param_di_nodes`). A struct generic over `T` (or holding
/// `PhantomData<fn() -> T>`, whose description is a signature returning `T`) would carry
/// that walk through every cut, and a cycle of a thousand definitions overflowed rustc's
/// stack there. A trait object is described by its name alone, so
/// `Held<dyn Fn() -> T>` names `T` where no pass follows it.
pub type Deferred<T> = Held<dyn Fn() -> T>;

/// What a [`Deferred`] is: the JSON held, and `F` (`dyn Fn() -> T`), which says what it
/// decodes into.
pub struct Held<F: ?Sized> {
    value: Value,
    /// A function returning a `Box<F>`: names `F` without owning one, so drop check and
    /// auto traits ignore it (a `Deferred` is `Send` and `Sync` whatever `T` is).
    of: PhantomData<fn() -> Box<F>>,
}

impl<F: ?Sized> Held<F> {
    /// The JSON held.
    pub fn json(&self) -> &Value {
        &self.value
    }

    pub fn into_json(self) -> Value {
        self.value
    }
}

impl<T: DeserializeOwned> Held<dyn Fn() -> T> {
    /// The value as its generated type.
    pub fn decode(&self) -> Result<T, serde_json::Error> {
        T::deserialize(&self.value)
    }
}

impl<T: Serialize> Held<dyn Fn() -> T> {
    /// Holds `value` (encoded now, as it would be written).
    pub fn new(value: &T) -> Result<Self, serde_json::Error> {
        Ok(Held { value: serde_json::to_value(value)?, of: PhantomData })
    }
}

impl<F: ?Sized> Clone for Held<F> {
    fn clone(&self) -> Self {
        Held { value: self.value.clone(), of: PhantomData }
    }
}

impl<F: ?Sized> PartialEq for Held<F> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<F: ?Sized> fmt::Debug for Held<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

impl<F: ?Sized> Serialize for Held<F> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(serializer)
    }
}

impl<'de, F: ?Sized> Deserialize<'de> for Held<F> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(|value| Held { value, of: PhantomData })
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

    #[test]
    fn it_is_send_and_sync_whatever_it_decodes_into() {
        fn shared<T: Send + Sync>() {}
        shared::<Deferred<std::rc::Rc<u8>>>();
    }
}
