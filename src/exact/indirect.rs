//! [`Indirect`]: the box generated types hold each other through where a chain or a cycle
//! of definitions runs long (the generator decides where: `rust::indirection`).

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An owned value on the heap, like `Box<T>`, that rustc does not look through when it
/// proves a type `Sized` or collects its drop-check rules.
///
/// `Box<T>` tells drop check that it owns a `T` (through a `PhantomData<T>`), so checking
/// a type that holds a thousand definitions each in the next walks all of them, and past
/// rustc's recursion limit fails with E0320. `Indirect` holds a raw pointer and drops
/// its value in a `Drop` impl of its own: drop check then asks only that `T` outlive it,
/// which types without lifetimes always do, and stops there.
pub struct Indirect<T> {
    value: NonNull<T>,
}

impl<T> Indirect<T> {
    pub fn new(value: T) -> Self {
        Indirect { value: NonNull::from(Box::leak(Box::new(value))) }
    }

    pub fn into_inner(self) -> T {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `value` came from `Box::leak` in `new`, and `this` is never dropped, so
        // the box is taken back exactly once.
        *unsafe { Box::from_raw(this.value.as_ptr()) }
    }
}

impl<T> Drop for Indirect<T> {
    fn drop(&mut self) {
        // SAFETY: `value` came from `Box::leak` in `new` and is dropped only here, once.
        drop(unsafe { Box::from_raw(self.value.as_ptr()) });
    }
}

impl<T> Deref for Indirect<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: `value` points to a live `T` owned by `self` until `self` is dropped.
        unsafe { self.value.as_ref() }
    }
}

impl<T> DerefMut for Indirect<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes the access unique.
        unsafe { self.value.as_mut() }
    }
}

// SAFETY: `Indirect<T>` owns its `T` as a `Box<T>` does, so it may cross threads and be
// shared exactly when a `Box<T>` may.
unsafe impl<T: Send> Send for Indirect<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for Indirect<T> {}

impl<T: Clone> Clone for Indirect<T> {
    fn clone(&self) -> Self {
        Indirect::new(T::clone(self))
    }
}

impl<T: PartialEq> PartialEq for Indirect<T> {
    fn eq(&self, other: &Self) -> bool {
        T::eq(self, other)
    }
}

impl<T: fmt::Debug> fmt::Debug for Indirect<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        T::fmt(self, f)
    }
}

impl<T: Serialize> Serialize for Indirect<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        T::serialize(self, serializer)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Indirect<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(Indirect::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    #[test]
    fn it_owns_its_value_as_a_box_does() {
        let counted = Rc::new(());
        let held = Indirect::new((Rc::clone(&counted), vec![1, 2]));
        let copy = held.clone();
        assert_eq!(Rc::strong_count(&counted), 3);
        assert_eq!(held, copy);
        assert_eq!(format!("{held:?}"), format!("{:?}", (&counted, vec![1, 2])));
        drop(copy);
        let (rc, items) = held.into_inner();
        assert_eq!((Rc::strong_count(&rc), items), (2, vec![1, 2]));
        drop(rc);
        assert_eq!(Rc::strong_count(&counted), 1, "every clone dropped once");
    }

    #[test]
    fn it_serializes_as_its_value() {
        let held: Indirect<Vec<u8>> = serde_json::from_str("[1,2]").expect("JSON");
        assert_eq!(*held, [1, 2]);
        assert_eq!(serde_json::to_string(&held).expect("JSON"), "[1,2]");
    }
}
