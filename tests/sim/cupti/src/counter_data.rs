//! The sim's counter data images (range profiler and PM sampling): its own layout,
//! opaque to clients as the real one is, sized by `Get*CounterDataSize`, laid out by
//! `*CounterDataImageInitialize`, filled by `*DecodeData`, read by the host API.
//!
//! Layout (native byte order):
//! ```text
//! 0   magic "SIMCDAT1"
//! 8   kind u32 (1 range profiler, 2 PM sampling)
//! 12  number of metrics u32
//! 16  capacity u32 (ranges or samples)
//! 20  filled u32
//! 24  name bytes per record u32 (range names; 0 for samples)
//! 28  chip name, 16 bytes, NUL-padded
//! 44  records offset u32
//! 48  metric names, each NUL-terminated
//! ... records (at the records offset, 8-aligned), each:
//!     start u64, end u64, one f64 per metric, name bytes
//! ```
//! Range names are stored as their nesting path joined by `\x1f` (unit separator),
//! at most [`RANGE_NAME_BYTES`]` - 1` bytes (longer names are cut).

use std::ffi::CStr;

/// Record kinds.
pub const KIND_RANGE: u32 = 1;
/// Record kinds.
pub const KIND_SAMPLE: u32 = 2;
/// Bytes of a range name slot, NUL included.
pub const RANGE_NAME_BYTES: usize = 256;
/// Separates the levels of a nested range's path in a stored name.
pub const PATH_SEP: char = '\x1f';

const MAGIC: &[u8; 8] = b"SIMCDAT1";
const HEADER: usize = 48;

/// The shape of an image: what `Get*CounterDataSize` was asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    pub kind: u32,
    pub metrics: Vec<String>,
    pub capacity: usize,
    pub chip: String,
}

impl Shape {
    fn name_bytes(&self) -> usize {
        if self.kind == KIND_RANGE {
            RANGE_NAME_BYTES
        } else {
            0
        }
    }

    fn records_offset(&self) -> usize {
        let names: usize = self.metrics.iter().map(|m| m.len() + 1).sum();
        (HEADER + names).div_ceil(8) * 8
    }

    fn record_size(&self) -> usize {
        16 + 8 * self.metrics.len() + self.name_bytes()
    }

    /// The image size for this shape.
    pub fn size(&self) -> usize {
        self.records_offset() + self.capacity * self.record_size()
    }

    /// Lays out an empty image in `buf` (at least [`Shape::size`] bytes).
    pub fn initialize(&self, buf: &mut [u8]) {
        buf[..self.size()].fill(0);
        buf[..8].copy_from_slice(MAGIC);
        put_u32(buf, 8, self.kind);
        put_u32(buf, 12, self.metrics.len() as u32);
        put_u32(buf, 16, self.capacity as u32);
        put_u32(buf, 20, 0);
        put_u32(buf, 24, self.name_bytes() as u32);
        let chip = self.chip.as_bytes();
        let n = chip.len().min(15);
        buf[28..28 + n].copy_from_slice(&chip[..n]);
        put_u32(buf, 44, self.records_offset() as u32);
        let mut at = HEADER;
        for m in &self.metrics {
            buf[at..at + m.len()].copy_from_slice(m.as_bytes());
            at += m.len() + 1;
        }
    }
}

/// One record.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub start: u64,
    pub end: u64,
    pub values: Vec<f64>,
    /// Range path joined by [`PATH_SEP`]; empty for samples.
    pub name: String,
}

/// A parsed image header.
#[derive(Debug, Clone)]
pub struct Image {
    pub shape: Shape,
    pub filled: usize,
}

fn put_u32(buf: &mut [u8], at: usize, v: u32) {
    buf[at..at + 4].copy_from_slice(&v.to_ne_bytes());
}

fn get_u32(buf: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(buf[at..at + 4].try_into().expect("4 bytes"))
}

fn get_u64(buf: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(buf[at..at + 8].try_into().expect("8 bytes"))
}

fn cstr_at(buf: &[u8], at: usize, max: usize) -> String {
    let end = (at + max).min(buf.len());
    let s = &buf[at..end];
    let n = s.iter().position(|b| *b == 0).unwrap_or(s.len());
    String::from_utf8_lossy(&s[..n]).into_owned()
}

impl Image {
    /// The image in `buf`, `None` if it is not an initialised image of this layout
    /// (or `buf` is shorter than the layout says).
    pub fn parse(buf: &[u8]) -> Option<Image> {
        if buf.len() < HEADER || &buf[..8] != MAGIC {
            return None;
        }
        let kind = get_u32(buf, 8);
        let n = get_u32(buf, 12) as usize;
        let capacity = get_u32(buf, 16) as usize;
        let filled = get_u32(buf, 20) as usize;
        let chip = cstr_at(buf, 28, 16);
        let mut metrics = Vec::with_capacity(n);
        let mut at = HEADER;
        for _ in 0..n {
            let end = at + buf.get(at..)?.iter().position(|b| *b == 0)?;
            metrics.push(String::from_utf8(buf[at..end].to_vec()).ok()?);
            at = end + 1;
        }
        let shape = Shape {
            kind,
            metrics,
            capacity,
            chip,
        };
        let ok = (kind == KIND_RANGE || kind == KIND_SAMPLE)
            && filled <= capacity
            && get_u32(buf, 24) as usize == shape.name_bytes()
            && get_u32(buf, 44) as usize == shape.records_offset()
            && buf.len() >= shape.size();
        ok.then_some(Image { shape, filled })
    }

    /// Appends `rec`; false if the image is full.
    pub fn push(&mut self, buf: &mut [u8], rec: &Record) -> bool {
        if self.filled >= self.shape.capacity {
            return false;
        }
        let mut at = self.shape.records_offset() + self.filled * self.shape.record_size();
        buf[at..at + 8].copy_from_slice(&rec.start.to_ne_bytes());
        buf[at + 8..at + 16].copy_from_slice(&rec.end.to_ne_bytes());
        at += 16;
        for i in 0..self.shape.metrics.len() {
            let v = rec.values.get(i).copied().unwrap_or(f64::NAN);
            buf[at..at + 8].copy_from_slice(&v.to_ne_bytes());
            at += 8;
        }
        let nb = self.shape.name_bytes();
        if nb > 0 {
            let slot = &mut buf[at..at + nb];
            slot.fill(0);
            let mut n = rec.name.len().min(nb - 1);
            while !rec.name.is_char_boundary(n) {
                n -= 1;
            }
            slot[..n].copy_from_slice(&rec.name.as_bytes()[..n]);
        }
        self.filled += 1;
        put_u32(buf, 20, self.filled as u32);
        true
    }

    /// Record `index`, `None` past the filled ones.
    pub fn record(&self, buf: &[u8], index: usize) -> Option<Record> {
        if index >= self.filled {
            return None;
        }
        let mut at = self.shape.records_offset() + index * self.shape.record_size();
        let start = get_u64(buf, at);
        let end = get_u64(buf, at + 8);
        at += 16;
        let values = (0..self.shape.metrics.len())
            .map(|i| f64::from_bits(get_u64(buf, at + 8 * i)))
            .collect();
        at += 8 * self.shape.metrics.len();
        let name = cstr_at(buf, at, self.shape.name_bytes());
        Some(Record {
            start,
            end,
            values,
            name,
        })
    }
}

/// The image at (`ptr`, `size`) as a byte slice, `None` for null or empty.
///
/// # Safety
/// `ptr` is null or valid for reading `size` bytes for the returned lifetime.
pub unsafe fn bytes<'a>(ptr: *const u8, size: usize) -> Option<&'a [u8]> {
    if ptr.is_null() || size == 0 {
        return None;
    }
    // SAFETY: the caller's promise.
    Some(unsafe { std::slice::from_raw_parts(ptr, size) })
}

/// A range's stored path joined with `delimiter` (CUPTI's default "/" when null),
/// as a `malloc`ed C string the client may `free` (cupti_profiler_host.h: "CUPTI
/// allocate the memory internal and its user responsibility to free up").
///
/// # Safety
/// `delimiter` is null or a NUL-terminated string.
pub unsafe fn range_name(
    stored: &str,
    delimiter: *const std::ffi::c_char,
) -> *const std::ffi::c_char {
    let delim = if delimiter.is_null() {
        "/".to_owned()
    } else {
        // SAFETY: the caller's promise.
        unsafe { CStr::from_ptr(delimiter) }
            .to_string_lossy()
            .into_owned()
    };
    let joined = stored.split(PATH_SEP).collect::<Vec<_>>().join(&delim);
    let c = std::ffi::CString::new(joined).unwrap_or_default();
    // SAFETY: strdup of a valid C string.
    unsafe { libc::strdup(c.as_ptr()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let shape = Shape {
            kind: KIND_RANGE,
            metrics: vec!["a.sum".into(), "bb.max".into()],
            capacity: 2,
            chip: "GH100".into(),
        };
        let mut buf = vec![0xAAu8; shape.size() + 3];
        shape.initialize(&mut buf);
        let mut img = Image::parse(&buf).expect("image");
        assert_eq!(img.shape, shape);
        let r = Record {
            start: 1,
            end: 2,
            values: vec![3.0, 4.5],
            name: format!("outer{PATH_SEP}inner"),
        };
        assert!(img.push(&mut buf, &r));
        assert!(img.push(&mut buf, &r));
        assert!(!img.push(&mut buf, &r));
        let again = Image::parse(&buf).expect("image");
        assert_eq!(again.filled, 2);
        assert_eq!(again.record(&buf, 1), Some(r));
        assert!(Image::parse(&buf[..shape.size() - 1]).is_none());
    }
}
