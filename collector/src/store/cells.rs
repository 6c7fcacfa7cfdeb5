//! How a value of a record fills its columns of a row, in order, and reads back
//! ([`Cells`]): one column for a number or a string, several for a grid or a compute
//! capability, two parallel lists for metric values. `tables.rs` declares which field
//! goes to which columns.

use wire::{DropSource, MetricValue};

use super::columns::{RowReader, RowWriter};

/// How a record's field fills its columns of a row, in order, and reads back.
pub trait Cells: Sized {
    /// Whether [`Cells::read`] can refuse what the columns hold (values no writer
    /// makes). Declared by every implementation, so that a table whose rows cannot
    /// fail is known to be such ([`super::tables::rows_may_fail`]).
    const CAN_FAIL: bool;
    fn write(&self, w: &mut RowWriter);
    fn read(r: &mut RowReader) -> Result<Self, String>;
}

macro_rules! scalar_cells {
    ($($t:ty => $method:ident),*) => {$(
        impl Cells for $t {
            const CAN_FAIL: bool = false;
            fn write(&self, w: &mut RowWriter) {
                w.$method(*self);
            }
            fn read(r: &mut RowReader) -> Result<Self, String> {
                Ok(r.$method())
            }
        }
    )*};
}

scalar_cells!(u8 => u8, u16 => u16, u32 => u32, u64 => u64, i32 => i32, f64 => f64, bool => bool);

impl Cells for String {
    const CAN_FAIL: bool = false;
    fn write(&self, w: &mut RowWriter) {
        w.str(self);
    }
    fn read(r: &mut RowReader) -> Result<Self, String> {
        Ok(r.str())
    }
}

impl Cells for Vec<String> {
    const CAN_FAIL: bool = false;
    fn write(&self, w: &mut RowWriter) {
        w.strs(self);
    }
    fn read(r: &mut RowReader) -> Result<Self, String> {
        Ok(r.strs())
    }
}

impl Cells for Vec<Vec<u32>> {
    const CAN_FAIL: bool = false;
    fn write(&self, w: &mut RowWriter) {
        w.u32_lists(self);
    }
    fn read(r: &mut RowReader) -> Result<Self, String> {
        Ok(r.u32_lists())
    }
}

/// A device UUID.
impl Cells for [u8; 16] {
    const CAN_FAIL: bool = false;
    fn write(&self, w: &mut RowWriter) {
        w.uuid(self);
    }
    fn read(r: &mut RowReader) -> Result<Self, String> {
        Ok(r.uuid())
    }
}

/// A compute capability: major, minor.
impl Cells for (u32, u32) {
    const CAN_FAIL: bool = false;
    fn write(&self, w: &mut RowWriter) {
        w.u32(self.0);
        w.u32(self.1);
    }
    fn read(r: &mut RowReader) -> Result<Self, String> {
        Ok((r.u32(), r.u32()))
    }
}

/// A grid or block: x, y, z.
impl Cells for [i32; 3] {
    const CAN_FAIL: bool = false;
    fn write(&self, w: &mut RowWriter) {
        for v in self {
            w.i32(*v);
        }
    }
    fn read(r: &mut RowReader) -> Result<Self, String> {
        Ok([r.i32(), r.i32(), r.i32()])
    }
}

/// Metric values: two parallel lists, `metric` (string ids) and `value`.
impl Cells for Vec<MetricValue> {
    const CAN_FAIL: bool = true;
    fn write(&self, w: &mut RowWriter) {
        w.u32s(self.iter().map(|m| m.name));
        w.f64s(self.iter().map(|m| m.value));
    }
    fn read(r: &mut RowReader) -> Result<Self, String> {
        let (names, values) = (r.u32s(), r.f64s());
        if names.len() != values.len() {
            return Err(format!(
                "{} metric names but {} values",
                names.len(),
                values.len()
            ));
        }
        Ok(names
            .into_iter()
            .zip(values)
            .map(|(name, value)| MetricValue { name, value })
            .collect())
    }
}

/// A drop source by its name ([`DropSource::name`]).
impl Cells for DropSource {
    const CAN_FAIL: bool = true;
    fn write(&self, w: &mut RowWriter) {
        w.str(self.name());
    }
    fn read(r: &mut RowReader) -> Result<Self, String> {
        let word = r.str();
        DropSource::from_name(&word).ok_or_else(|| format!("unknown drop source {word:?}"))
    }
}
