//! Serde values straight into JS values, for the results of calls: the shapes stay defined once,
//! by the core's `Serialize` types, and come out exactly as napi's own serializer builds them
//! (numbers, bytes and anything unusual are handed to it). What differs is the cost on the
//! event loop's thread, where every result is converted: a property name is passed to V8 from
//! a stack buffer (napi's serializer allocates a C string for each), and an ASCII string (most
//! file contents, every path and hash) is copied in as Latin-1 instead of being decoded as
//! UTF-8.

use std::ffi::{c_char, CString};
use std::ptr;

use napi::{check_status, sys, Env, JsValue as _};
use serde::ser::{self, Serialize};

type Result<T> = std::result::Result<T, napi::Error>;

/// Converts `value` to a JS value.
pub fn to_js<T: Serialize + ?Sized>(env: sys::napi_env, value: &T) -> Result<sys::napi_value> {
    value.serialize(Ser(env))
}

struct Ser(sys::napi_env);

/// What napi's own serializer makes of a value (numbers: a number, or a BigInt beyond what a
/// number holds exactly, as napi decides).
fn napi_value<T: Serialize>(env: sys::napi_env, v: T) -> Result<sys::napi_value> {
    Ok(Env::from_raw(env).to_js_value(&v)?.raw())
}

fn string(env: sys::napi_env, s: &str) -> Result<sys::napi_value> {
    let mut out = ptr::null_mut();
    if s.is_ascii() {
        // ASCII is Latin-1 byte for byte: V8 copies it without decoding.
        check_status!(unsafe { sys::napi_create_string_latin1(env, s.as_ptr().cast(), s.len() as isize, &mut out) })?;
    } else {
        check_status!(unsafe { sys::napi_create_string_utf8(env, s.as_ptr().cast(), s.len() as isize, &mut out) })?;
    }
    Ok(out)
}

fn object(env: sys::napi_env) -> Result<sys::napi_value> {
    let mut out = ptr::null_mut();
    check_status!(unsafe { sys::napi_create_object(env, &mut out) })?;
    Ok(out)
}

fn array(env: sys::napi_env, len: usize) -> Result<sys::napi_value> {
    let mut out = ptr::null_mut();
    check_status!(unsafe { sys::napi_create_array_with_length(env, len, &mut out) })?;
    Ok(out)
}

fn null(env: sys::napi_env) -> Result<sys::napi_value> {
    let mut out = ptr::null_mut();
    check_status!(unsafe { sys::napi_get_null(env, &mut out) })?;
    Ok(out)
}

/// Sets `obj[name] = value`; `name` is NUL-terminated on the stack when it is short.
fn set_named(env: sys::napi_env, obj: sys::napi_value, name: &str, value: sys::napi_value) -> Result<()> {
    let mut buf = [0u8; 64];
    if name.len() < buf.len() && !name.as_bytes().contains(&0) {
        buf[..name.len()].copy_from_slice(name.as_bytes());
        check_status!(unsafe { sys::napi_set_named_property(env, obj, buf.as_ptr() as *const c_char, value) })
    } else {
        let name = CString::new(name)?;
        check_status!(unsafe { sys::napi_set_named_property(env, obj, name.as_ptr(), value) })
    }
}

fn set_element(env: sys::napi_env, arr: sys::napi_value, index: u32, value: sys::napi_value) -> Result<()> {
    check_status!(unsafe { sys::napi_set_element(env, arr, index, value) })
}

fn set_property(env: sys::napi_env, obj: sys::napi_value, key: sys::napi_value, value: sys::napi_value) -> Result<()> {
    check_status!(unsafe { sys::napi_set_property(env, obj, key, value) })
}

/// Bytes as napi's serializer makes them (a Buffer).
struct Bytes<'a>(&'a [u8]);

impl Serialize for Bytes<'_> {
    fn serialize<S: ser::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

impl ser::Serializer for Ser {
    type Ok = sys::napi_value;
    type Error = napi::Error;
    type SerializeSeq = Seq;
    type SerializeTuple = Seq;
    type SerializeTupleStruct = Seq;
    type SerializeTupleVariant = Seq;
    type SerializeMap = Map;
    type SerializeStruct = Struct;
    type SerializeStructVariant = Struct;

    fn serialize_bool(self, v: bool) -> Result<Self::Ok> {
        let mut out = ptr::null_mut();
        check_status!(unsafe { sys::napi_get_boolean(self.0, v, &mut out) })?;
        Ok(out)
    }
    fn serialize_i8(self, v: i8) -> Result<Self::Ok> {
        napi_value(self.0, v)
    }
    fn serialize_i16(self, v: i16) -> Result<Self::Ok> {
        napi_value(self.0, v)
    }
    fn serialize_i32(self, v: i32) -> Result<Self::Ok> {
        napi_value(self.0, v)
    }
    fn serialize_i64(self, v: i64) -> Result<Self::Ok> {
        napi_value(self.0, v)
    }
    fn serialize_i128(self, v: i128) -> Result<Self::Ok> {
        napi_value(self.0, v)
    }
    fn serialize_u8(self, v: u8) -> Result<Self::Ok> {
        napi_value(self.0, v)
    }
    fn serialize_u16(self, v: u16) -> Result<Self::Ok> {
        napi_value(self.0, v)
    }
    fn serialize_u32(self, v: u32) -> Result<Self::Ok> {
        napi_value(self.0, v)
    }
    fn serialize_u64(self, v: u64) -> Result<Self::Ok> {
        napi_value(self.0, v)
    }
    fn serialize_u128(self, v: u128) -> Result<Self::Ok> {
        napi_value(self.0, v)
    }
    fn serialize_f32(self, v: f32) -> Result<Self::Ok> {
        napi_value(self.0, v)
    }
    fn serialize_f64(self, v: f64) -> Result<Self::Ok> {
        napi_value(self.0, v)
    }
    fn serialize_char(self, v: char) -> Result<Self::Ok> {
        string(self.0, v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<Self::Ok> {
        string(self.0, v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Self::Ok> {
        napi_value(self.0, Bytes(v))
    }
    fn serialize_none(self) -> Result<Self::Ok> {
        null(self.0)
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<Self::Ok> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Self::Ok> {
        null(self.0)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<Self::Ok> {
        null(self.0)
    }
    fn serialize_unit_variant(self, _name: &'static str, _index: u32, variant: &'static str) -> Result<Self::Ok> {
        string(self.0, variant)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(self, _name: &'static str, value: &T) -> Result<Self::Ok> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Self::Ok> {
        let obj = object(self.0)?;
        let inner = value.serialize(Ser(self.0))?;
        set_named(self.0, obj, variant, inner)?;
        Ok(obj)
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Seq> {
        Ok(Seq { env: self.0, values: Vec::with_capacity(len.unwrap_or(0).min(MAX_ARRAY_OF)), outer: None })
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Seq> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(self, _name: &'static str, _index: u32, variant: &'static str, len: usize) -> Result<Seq> {
        Ok(Seq { env: self.0, values: Vec::with_capacity(len.min(MAX_ARRAY_OF)), outer: Some(variant) })
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Map> {
        Ok(Map { env: self.0, obj: object(self.0)?, key: None })
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Struct> {
        Ok(Struct { env: self.0, obj: object(self.0)?, outer: None })
    }
    fn serialize_struct_variant(self, _name: &'static str, _index: u32, variant: &'static str, _len: usize) -> Result<Struct> {
        let outer = object(self.0)?;
        let obj = object(self.0)?;
        set_named(self.0, outer, variant, obj)?;
        Ok(Struct { env: self.0, obj, outer: Some(outer) })
    }
}

struct Seq {
    env: sys::napi_env,
    /// The elements, converted as they come; the array is made from them at the end.
    values: Vec<sys::napi_value>,
    /// `{ variant: [...] }` for a tuple variant.
    outer: Option<&'static str>,
}

/// Arrays of at least this many elements are made by one call of `Array.of` (see [`Seq::done`]).
const MIN_ARRAY_OF: usize = 16;
/// ... and of at most this many (one call's arguments are on the stack).
const MAX_ARRAY_OF: usize = 8192;

impl Seq {
    fn push<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        let v = value.serialize(Ser(self.env))?;
        self.values.push(v);
        Ok(())
    }

    /// The array. A long one is made by one call of the `Array.of` the addon took when it was
    /// first used on this thread: `napi_set_element` goes through V8's generic property store
    /// for each element (for a 1,000-entry listing, three times the cost of making its strings).
    fn array(&self) -> Result<sys::napi_value> {
        let n = self.values.len();
        if (MIN_ARRAY_OF..=MAX_ARRAY_OF).contains(&n) {
            if let Some(of) = crate::settle::array_of(self.env) {
                let mut undefined = ptr::null_mut();
                let mut out = ptr::null_mut();
                let made = unsafe {
                    sys::napi_get_undefined(self.env, &mut undefined) == sys::Status::napi_ok
                        && sys::napi_call_function(self.env, undefined, of, n, self.values.as_ptr(), &mut out) == sys::Status::napi_ok
                };
                if made && !out.is_null() {
                    return Ok(out);
                }
                // Whatever went wrong, the plain way below (an exception it left is cleared).
                let mut pending = false;
                unsafe { sys::napi_is_exception_pending(self.env, &mut pending) };
                if pending {
                    let mut ignored = ptr::null_mut();
                    unsafe { sys::napi_get_and_clear_last_exception(self.env, &mut ignored) };
                }
            }
        }
        let arr = array(self.env, n)?;
        for (i, v) in self.values.iter().enumerate() {
            set_element(self.env, arr, i as u32, *v)?;
        }
        Ok(arr)
    }

    fn done(self) -> Result<sys::napi_value> {
        let arr = self.array()?;
        match self.outer {
            None => Ok(arr),
            Some(variant) => {
                let outer = object(self.env)?;
                set_named(self.env, outer, variant, arr)?;
                Ok(outer)
            }
        }
    }
}

/// The four sequence kinds serde has are one JavaScript array each.
macro_rules! seq_kinds {
    ($($kind:ident :: $push:ident),*) => {$(
        impl ser::$kind for Seq {
            type Ok = sys::napi_value;
            type Error = napi::Error;
            fn $push<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
                self.push(value)
            }
            fn end(self) -> Result<Self::Ok> {
                self.done()
            }
        }
    )*};
}
seq_kinds!(SerializeSeq::serialize_element, SerializeTuple::serialize_element, SerializeTupleStruct::serialize_field, SerializeTupleVariant::serialize_field);

struct Map {
    env: sys::napi_env,
    obj: sys::napi_value,
    key: Option<sys::napi_value>,
}

impl ser::SerializeMap for Map {
    type Ok = sys::napi_value;
    type Error = napi::Error;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<()> {
        self.key = Some(key.serialize(Ser(self.env))?);
        Ok(())
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        let key = match self.key.take() {
            Some(k) => k,
            None => return Err(napi::Error::from_reason("a map value without its key")),
        };
        let v = value.serialize(Ser(self.env))?;
        set_property(self.env, self.obj, key, v)
    }
    fn end(self) -> Result<Self::Ok> {
        Ok(self.obj)
    }
}

struct Struct {
    env: sys::napi_env,
    obj: sys::napi_value,
    /// `{ variant: {...} }` for a struct variant.
    outer: Option<sys::napi_value>,
}

impl ser::SerializeStruct for Struct {
    type Ok = sys::napi_value;
    type Error = napi::Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, key: &'static str, value: &T) -> Result<()> {
        let v = value.serialize(Ser(self.env))?;
        set_named(self.env, self.obj, key, v)
    }
    fn end(self) -> Result<Self::Ok> {
        Ok(self.obj)
    }
}

impl ser::SerializeStructVariant for Struct {
    type Ok = sys::napi_value;
    type Error = napi::Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, key: &'static str, value: &T) -> Result<()> {
        let v = value.serialize(Ser(self.env))?;
        set_named(self.env, self.obj, key, v)
    }
    fn end(self) -> Result<Self::Ok> {
        Ok(self.outer.unwrap_or(self.obj))
    }
}
