//! Turning fuzzer bytes into numbers that reach the edge cases: each value is either a raw f64
//! bit pattern (NaN, infinities, subnormals, anything) or a small integer scaled by a power of two
//! (ties, constant columns, huge and tiny magnitudes).

pub struct Bytes<'a>(pub &'a [u8]);

impl Bytes<'_> {
    pub fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }
    pub fn value(&mut self) -> f64 {
        let tag = self.byte();
        if tag & 0x80 != 0 {
            let mut raw = [0u8; 8];
            for b in raw.iter_mut() {
                *b = self.byte();
            }
            f64::from_le_bytes(raw)
        } else {
            let small = f64::from(self.byte() as i8);
            let exponent = i32::from(tag & 0x7f) - 64; // 2^-64 .. 2^63
            small * libm_pow2(exponent)
        }
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn libm_pow2(e: i32) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}
