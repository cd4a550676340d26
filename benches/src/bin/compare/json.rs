//! Reading back the JSON that [`report::json`](crate::report::json) writes:
//! how `compare` takes the outcomes of its child processes. A small parser
//! for the JSON subset that writer emits (objects, arrays, strings with the
//! escapes it writes, numbers, `null`, booleans), not a general one.

use recycler_benches::GlobalAllocator;

use crate::measure::Measured;
use crate::report::{Outcome, Unit};

/// A JSON value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Value>),
    Obj(Vec<(String, Value)>),
}

impl Value {
    /// The member `key` of an object.
    fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Obj(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    fn as_arr(&self) -> Option<&[Value]> {
        match self {
            Value::Arr(a) => Some(a),
            _ => None,
        }
    }

    /// A number; `null` (how the writer spells NaN) reads as NaN.
    fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Num(x) => Some(*x),
            Value::Null => Some(f64::NAN),
            _ => None,
        }
    }
}

/// Parses `text` as one JSON value.
pub(crate) fn parse(text: &str) -> Result<Value, String> {
    let mut p = Parser {
        bytes: text.as_bytes(),
        at: 0,
    };
    let v = p.value()?;
    p.skip_ws();
    if p.at != p.bytes.len() {
        return Err(format!("trailing characters at byte {}", p.at));
    }
    Ok(v)
}

struct Parser<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.bytes.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.bytes.get(self.at).copied()
    }

    fn expect(&mut self, b: u8) -> Result<(), String> {
        if self.peek() == Some(b) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!("expected `{}` at byte {}", b as char, self.at))
        }
    }

    fn literal(&mut self, word: &str, v: Value) -> Result<Value, String> {
        if self.bytes[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            Ok(v)
        } else {
            Err(format!("unexpected token at byte {}", self.at))
        }
    }

    fn value(&mut self) -> Result<Value, String> {
        match self.peek() {
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            Some(b'"') => self.string().map(Value::Str),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(format!("unexpected character at byte {}", self.at)),
            None => Err("unexpected end of input".into()),
        }
    }

    fn object(&mut self) -> Result<Value, String> {
        self.expect(b'{')?;
        let mut members = Vec::new();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(Value::Obj(members));
        }
        loop {
            if self.peek() != Some(b'"') {
                return Err(format!("expected a key at byte {}", self.at));
            }
            let key = self.string()?;
            self.expect(b':')?;
            members.push((key, self.value()?));
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Value::Obj(members));
                }
                _ => return Err(format!("expected `,` or `}}` at byte {}", self.at)),
            }
        }
    }

    fn array(&mut self) -> Result<Value, String> {
        self.expect(b'[')?;
        let mut items = Vec::new();
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(Value::Arr(items));
        }
        loop {
            items.push(self.value()?);
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(Value::Arr(items));
                }
                _ => return Err(format!("expected `,` or `]` at byte {}", self.at)),
            }
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.expect(b'"')?;
        let mut out = Vec::new();
        loop {
            let Some(&b) = self.bytes.get(self.at) else {
                return Err("unterminated string".into());
            };
            self.at += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    let Some(&e) = self.bytes.get(self.at) else {
                        return Err("unterminated escape".into());
                    };
                    self.at += 1;
                    match e {
                        b'"' | b'\\' | b'/' => out.push(e),
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        b'r' => out.push(b'\r'),
                        b'u' => {
                            let hex = self
                                .bytes
                                .get(self.at..self.at + 4)
                                .and_then(|h| std::str::from_utf8(h).ok())
                                .and_then(|h| u32::from_str_radix(h, 16).ok())
                                .and_then(char::from_u32)
                                .ok_or_else(|| format!("bad \\u escape at byte {}", self.at))?;
                            self.at += 4;
                            let mut buf = [0; 4];
                            out.extend_from_slice(hex.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => return Err(format!("unknown escape at byte {}", self.at)),
                    }
                }
                _ => out.push(b),
            }
        }
        String::from_utf8(out).map_err(|_| "a string is not UTF-8".to_string())
    }

    fn number(&mut self) -> Result<Value, String> {
        let start = self.at;
        while self
            .bytes
            .get(self.at)
            .is_some_and(|b| matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
        {
            self.at += 1;
        }
        std::str::from_utf8(&self.bytes[start..self.at])
            .ok()
            .and_then(|s| s.parse().ok())
            .map(Value::Num)
            .ok_or_else(|| format!("bad number at byte {start}"))
    }
}

/// The outcomes in a document written by [`report::json`](crate::report::json).
pub(crate) fn outcomes(text: &str) -> Result<Vec<Outcome>, String> {
    let doc = parse(text)?;
    let workloads = doc
        .get("workloads")
        .and_then(Value::as_arr)
        .ok_or("no `workloads` array")?;
    workloads.iter().map(outcome).collect()
}

fn outcome(v: &Value) -> Result<Outcome, String> {
    let text = |key: &str| {
        v.get(key)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("a workload has no string `{key}`"))
    };
    let unit = Unit::from_json_name(text("unit")?).ok_or("unknown `unit`")?;
    let alloc = GlobalAllocator::from_name(text("global_allocator")?)
        .ok_or("unknown `global_allocator`")?;
    let notes = v
        .get("notes")
        .and_then(Value::as_arr)
        .ok_or("a workload has no `notes`")?
        .iter()
        .map(|n| {
            n.as_str()
                .map(str::to_string)
                .ok_or("a note is not a string")
        })
        .collect::<Result<Vec<_>, _>>()?;
    let results = v
        .get("results")
        .and_then(Value::as_arr)
        .ok_or("a workload has no `results`")?
        .iter()
        .map(|r| {
            let name = r
                .get("name")
                .and_then(Value::as_str)
                .ok_or("a result has no `name`")?;
            let median_ns = r
                .get("median_ns_per_op")
                .and_then(Value::as_f64)
                .ok_or("a result has no `median_ns_per_op`")?;
            let samples_ns = r
                .get("samples_ns_per_op")
                .and_then(Value::as_arr)
                .ok_or("a result has no `samples_ns_per_op`")?
                .iter()
                .map(|s| s.as_f64().ok_or("a sample is not a number"))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Measured {
                name: name.to_string(),
                samples_ns,
                median_ns,
            })
        })
        .collect::<Result<Vec<_>, &str>>()?;
    let mut o = Outcome::new(
        text("id")?,
        text("title")?,
        unit,
        text("ours")?,
        alloc,
        results,
    );
    o.notes = notes;
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report;

    #[test]
    fn parses_values() {
        let v = parse(r#" {"a": [1, -2.5e3, null, true, false], "b": "x\"\\\n\u00e9"} "#).unwrap();
        assert_eq!(
            v.get("a"),
            Some(&Value::Arr(vec![
                Value::Num(1.0),
                Value::Num(-2500.0),
                Value::Null,
                Value::Bool(true),
                Value::Bool(false),
            ]))
        );
        assert_eq!(v.get("b").and_then(Value::as_str), Some("x\"\\\né"));
        assert_eq!(parse("{}").unwrap(), Value::Obj(Vec::new()));
    }

    #[test]
    fn rejects_malformed_input() {
        for bad in [
            "",
            "{",
            "[1,]",
            r#"{"a" 1}"#,
            r#""abc"#,
            "nul",
            "1 2",
            "{1: 2}",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn outcomes_round_trip_through_json() {
        let mut a = report::tests::outcome();
        a.results[1].median_ns = f64::NAN;
        a.results[1].samples_ns = vec![f64::NAN];
        let mut b = report::tests::outcome();
        b.alloc = GlobalAllocator::Mimalloc;
        b.notes.push("with\ttab and \u{1}".into());
        let back = outcomes(&report::json(&[a.clone(), b.clone()], "machine")).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[1], b);
        // NaN != NaN: compare the rest.
        assert!(back[0].results[1].median_ns.is_nan());
        assert_eq!(back[0].results[0], a.results[0]);
        assert_eq!(back[0].alloc, GlobalAllocator::Jemalloc);
        assert_eq!(back[0].title, a.title);
    }
}
