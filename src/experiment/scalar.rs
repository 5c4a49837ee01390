//! A scalar argument's bytes, encoded exactly in its type.

use super::error::BadValue;
use super::expr::Number;
use super::Dtype;

/// A scalar's bytes in its dtype; a value the dtype cannot hold is an error (an integer out
/// of range, a fraction for an integer type, a float beyond the type's largest finite value).
pub fn encode(dtype: Dtype, v: Number) -> Result<Vec<u8>, BadValue> {
    let mut out = Vec::with_capacity(dtype.size());
    match (dtype.int_range(), v) {
        (Some((lo, hi)), Number::Int(i)) if (lo..=hi).contains(&i) => dtype.push_int(i, &mut out),
        (Some((lo, hi)), Number::Int(i)) => {
            return Err(BadValue(format!(
                "{i} does not fit {} (from {lo} to {hi})",
                dtype.key()
            )))
        }
        (Some(_), Number::Float(f)) => {
            return Err(BadValue(format!(
                "the {} gets the fraction {f}",
                dtype.key()
            )))
        }
        (None, v) => {
            let float = match v {
                Number::Int(i) => i as f64,
                Number::Float(f) => f,
            };
            dtype.push(float, &mut out);
            if float.is_finite() && !dtype.read(&out).is_finite() {
                return Err(BadValue(format!("{float} overflows {}", dtype.key())));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_are_encoded_exactly_in_every_dtype() {
        let int = |d, v| encode(d, Number::Int(v));
        assert_eq!(int(Dtype::I8, -128).unwrap(), (-128i8).to_ne_bytes());
        assert!(int(Dtype::I8, 128)
            .unwrap_err()
            .0
            .contains("does not fit i8"));
        assert_eq!(int(Dtype::U16, 65535).unwrap(), 65535u16.to_ne_bytes());
        assert!(int(Dtype::U8, -1).is_err());
        let big = (1i128 << 62) + 1; // not representable in f64
        assert_eq!(int(Dtype::I64, big).unwrap(), (big as i64).to_ne_bytes());
        let f16 = encode(Dtype::F16, Number::Float(1.5)).unwrap();
        assert_eq!(f16, half::f16::from_f32(1.5).to_ne_bytes());
        assert_eq!(Dtype::F16.read(&f16), 1.5);
        assert_eq!(
            Dtype::Bf16.read(&encode(Dtype::Bf16, Number::Int(3)).unwrap()),
            3.0
        );
        let err = encode(Dtype::F16, Number::Float(70000.0)).unwrap_err();
        assert!(err.0.contains("overflows f16"), "{err}");
        assert!(encode(Dtype::Bf16, Number::Float(70000.0)).is_ok());
    }
}
