//! Typed columns: the Arrow type of each column kind, a builder that appends values of
//! that kind in row order, and a reader that takes them back out of a batch.
//!
//! A table ([`super::tables`]) writes a record as a sequence of typed pushes, one per
//! column in schema order, and reads a row back as the same sequence of typed gets.
//! A push or get of the wrong kind is a programming error in the table definition,
//! caught by the round-trip tests; on a batch read from a file, a column whose type is
//! not the schema's is refused before any row is read ([`RowReader::new`]).

use std::sync::Arc;

use arrow_array::builder::{
    ArrayBuilder, BooleanBuilder, FixedSizeBinaryBuilder, Float64Builder, Int32Builder,
    ListBuilder, StringBuilder, UInt16Builder, UInt32Builder, UInt64Builder, UInt8Builder,
};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type};
use arrow_array::{
    Array, ArrayRef, BooleanArray, FixedSizeBinaryArray, Float64Array, GenericListArray,
    Int32Array, PrimitiveArray, RecordBatch, StringArray, UInt16Array, UInt32Array, UInt64Array,
    UInt8Array,
};
use arrow_schema::{DataType, Field};

/// The kinds of column a session table has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    U8,
    U16,
    U32,
    U64,
    I32,
    F64,
    Bool,
    Str,
    /// 16 bytes (a device UUID).
    Uuid,
    StrList,
    U32List,
    F64List,
    U32ListList,
}

fn item(t: DataType) -> Arc<Field> {
    Arc::new(Field::new("item", t, false))
}

impl Kind {
    pub fn data_type(self) -> DataType {
        match self {
            Kind::U8 => DataType::UInt8,
            Kind::U16 => DataType::UInt16,
            Kind::U32 => DataType::UInt32,
            Kind::U64 => DataType::UInt64,
            Kind::I32 => DataType::Int32,
            Kind::F64 => DataType::Float64,
            Kind::Bool => DataType::Boolean,
            Kind::Str => DataType::Utf8,
            Kind::Uuid => DataType::FixedSizeBinary(16),
            Kind::StrList => DataType::List(item(DataType::Utf8)),
            Kind::U32List => DataType::List(item(DataType::UInt32)),
            Kind::F64List => DataType::List(item(DataType::Float64)),
            Kind::U32ListList => DataType::List(item(DataType::List(item(DataType::UInt32)))),
        }
    }

    fn builder(self) -> Builder {
        match self {
            Kind::U8 => Builder::U8(UInt8Builder::new()),
            Kind::U16 => Builder::U16(UInt16Builder::new()),
            Kind::U32 => Builder::U32(UInt32Builder::new()),
            Kind::U64 => Builder::U64(UInt64Builder::new()),
            Kind::I32 => Builder::I32(Int32Builder::new()),
            Kind::F64 => Builder::F64(Float64Builder::new()),
            Kind::Bool => Builder::Bool(BooleanBuilder::new()),
            Kind::Str => Builder::Str(StringBuilder::new()),
            Kind::Uuid => Builder::Uuid(FixedSizeBinaryBuilder::new(16)),
            Kind::StrList => Builder::StrList(
                ListBuilder::new(StringBuilder::new()).with_field(item(DataType::Utf8)),
            ),
            Kind::U32List => Builder::U32List(
                ListBuilder::new(UInt32Builder::new()).with_field(item(DataType::UInt32)),
            ),
            Kind::F64List => Builder::F64List(
                ListBuilder::new(Float64Builder::new()).with_field(item(DataType::Float64)),
            ),
            Kind::U32ListList => Builder::U32ListList(
                ListBuilder::new(
                    ListBuilder::new(UInt32Builder::new()).with_field(item(DataType::UInt32)),
                )
                .with_field(item(DataType::List(item(DataType::UInt32)))),
            ),
        }
    }
}

enum Builder {
    U8(UInt8Builder),
    U16(UInt16Builder),
    U32(UInt32Builder),
    U64(UInt64Builder),
    I32(Int32Builder),
    F64(Float64Builder),
    Bool(BooleanBuilder),
    Str(StringBuilder),
    Uuid(FixedSizeBinaryBuilder),
    StrList(ListBuilder<StringBuilder>),
    U32List(ListBuilder<UInt32Builder>),
    F64List(ListBuilder<Float64Builder>),
    U32ListList(ListBuilder<ListBuilder<UInt32Builder>>),
}

impl Builder {
    fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::U8(b) => Arc::new(b.finish()),
            Builder::U16(b) => Arc::new(b.finish()),
            Builder::U32(b) => Arc::new(b.finish()),
            Builder::U64(b) => Arc::new(b.finish()),
            Builder::I32(b) => Arc::new(b.finish()),
            Builder::F64(b) => Arc::new(b.finish()),
            Builder::Bool(b) => Arc::new(b.finish()),
            Builder::Str(b) => Arc::new(b.finish()),
            Builder::Uuid(b) => Arc::new(b.finish()),
            Builder::StrList(b) => Arc::new(b.finish()),
            Builder::U32List(b) => Arc::new(b.finish()),
            Builder::F64List(b) => Arc::new(b.finish()),
            Builder::U32ListList(b) => Arc::new(b.finish()),
        }
    }

    fn len(&self) -> usize {
        match self {
            Builder::U8(b) => b.len(),
            Builder::U16(b) => b.len(),
            Builder::U32(b) => b.len(),
            Builder::U64(b) => b.len(),
            Builder::I32(b) => b.len(),
            Builder::F64(b) => b.len(),
            Builder::Bool(b) => b.len(),
            Builder::Str(b) => b.len(),
            Builder::Uuid(b) => b.len(),
            Builder::StrList(b) => b.len(),
            Builder::U32List(b) => b.len(),
            Builder::F64List(b) => b.len(),
            Builder::U32ListList(b) => b.len(),
        }
    }
}

/// The columns of one table being filled, row by row.
pub struct RowWriter {
    cols: Vec<Builder>,
    /// The column the next push goes to.
    at: usize,
    rows: usize,
}

macro_rules! push {
    ($name:ident, $variant:ident, $t:ty) => {
        pub fn $name(&mut self, v: $t) {
            match &mut self.cols[self.at] {
                Builder::$variant(b) => b.append_value(v),
                _ => unreachable!("column {} is not {}", self.at, stringify!($variant)),
            }
            self.at += 1;
        }
    };
}

impl RowWriter {
    pub fn new(kinds: &[Kind]) -> RowWriter {
        RowWriter {
            cols: kinds.iter().map(|k| k.builder()).collect(),
            at: 0,
            rows: 0,
        }
    }

    push!(u8, U8, u8);
    push!(u16, U16, u16);
    push!(u32, U32, u32);
    push!(u64, U64, u64);
    push!(i32, I32, i32);
    push!(f64, F64, f64);
    push!(bool, Bool, bool);
    push!(str, Str, &str);

    pub fn uuid(&mut self, v: &[u8; 16]) {
        match &mut self.cols[self.at] {
            Builder::Uuid(b) => b.append_value(v).expect("16 bytes into a 16-byte column"),
            _ => unreachable!("column {} is not Uuid", self.at),
        }
        self.at += 1;
    }

    pub fn strs(&mut self, v: &[String]) {
        match &mut self.cols[self.at] {
            Builder::StrList(b) => {
                for s in v {
                    b.values().append_value(s);
                }
                b.append(true);
            }
            _ => unreachable!("column {} is not StrList", self.at),
        }
        self.at += 1;
    }

    pub fn u32s(&mut self, v: impl IntoIterator<Item = u32>) {
        match &mut self.cols[self.at] {
            Builder::U32List(b) => {
                for x in v {
                    b.values().append_value(x);
                }
                b.append(true);
            }
            _ => unreachable!("column {} is not U32List", self.at),
        }
        self.at += 1;
    }

    pub fn f64s(&mut self, v: impl IntoIterator<Item = f64>) {
        match &mut self.cols[self.at] {
            Builder::F64List(b) => {
                for x in v {
                    b.values().append_value(x);
                }
                b.append(true);
            }
            _ => unreachable!("column {} is not F64List", self.at),
        }
        self.at += 1;
    }

    pub fn u32_lists(&mut self, v: &[Vec<u32>]) {
        match &mut self.cols[self.at] {
            Builder::U32ListList(b) => {
                for inner in v {
                    for x in inner {
                        b.values().values().append_value(*x);
                    }
                    b.values().append(true);
                }
                b.append(true);
            }
            _ => unreachable!("column {} is not U32ListList", self.at),
        }
        self.at += 1;
    }

    /// Ends a row: every column must have had its push.
    pub fn end_row(&mut self) {
        debug_assert_eq!(self.at, self.cols.len(), "a row pushed too few columns");
        self.at = 0;
        self.rows += 1;
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The rows so far as arrays, in column order; the writer is empty after.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        debug_assert!(self.cols.iter().all(|c| c.len() == self.rows));
        self.rows = 0;
        self.cols.iter_mut().map(|c| c.finish()).collect()
    }
}

enum Col<'a> {
    U8(&'a UInt8Array),
    U16(&'a UInt16Array),
    U32(&'a UInt32Array),
    U64(&'a UInt64Array),
    I32(&'a Int32Array),
    F64(&'a Float64Array),
    Bool(&'a BooleanArray),
    Str(&'a StringArray),
    Uuid(&'a FixedSizeBinaryArray),
    StrList(&'a GenericListArray<i32>),
    U32List(&'a GenericListArray<i32>),
    F64List(&'a GenericListArray<i32>),
    U32ListList(&'a GenericListArray<i32>),
    /// A column added after the file was written (see [`RowReader::new`]): every
    /// value reads as the type's default (0, empty).
    Absent,
}

/// Reads the rows of one batch whose schema has been checked against the table's.
pub struct RowReader<'a> {
    cols: Vec<Col<'a>>,
    /// Rows in the batch.
    len: usize,
    row: usize,
    at: usize,
}

macro_rules! get {
    ($name:ident, $variant:ident, $t:ty) => {
        pub fn $name(&mut self) -> $t {
            let v = match &self.cols[self.at] {
                Col::$variant(a) => a.value(self.row),
                Col::Absent => Default::default(),
                _ => unreachable!("column {} is not {}", self.at, stringify!($variant)),
            };
            self.at += 1;
            v
        }
    };
}

/// The values of a column of primitive kind `T` (`UInt64Type` for [`Kind::U64`]),
/// as [`crate::store::Store::read_columns`] hands them; `Err` for another type or
/// nulls.
pub fn values<T: arrow_array::types::ArrowPrimitiveType>(
    a: &ArrayRef,
) -> Result<&[T::Native], String> {
    let column = a
        .as_any()
        .downcast_ref::<PrimitiveArray<T>>()
        .ok_or_else(|| format!("a column is {}, expected {}", a.data_type(), T::DATA_TYPE))?;
    if column.null_count() > 0 {
        return Err("a column has nulls".into());
    }
    Ok(column.values())
}

fn prim<T: arrow_array::types::ArrowPrimitiveType>(a: &ArrayRef) -> &PrimitiveArray<T> {
    a.as_primitive::<T>()
}

impl<'a> RowReader<'a> {
    /// Checks that `batch` has the columns `names` of kinds `kinds`, in order, without
    /// nulls: all of them, or at least the first `required` (a file written before
    /// the later ones were added to its table: those read as their type's default).
    /// Errors name the first column that differs.
    pub fn new(
        batch: &'a RecordBatch,
        names: &[&str],
        kinds: &[Kind],
        required: usize,
    ) -> Result<Self, String> {
        let schema = batch.schema();
        let present = schema.fields().len();
        let required = required.min(kinds.len());
        if present > kinds.len() || present < required {
            return Err(if required < kinds.len() {
                format!("{present} columns, expected {required} to {}", kinds.len())
            } else {
                format!("{present} columns, expected {}", kinds.len())
            });
        }
        let mut cols = Vec::with_capacity(kinds.len());
        for (i, ((field, name), kind)) in schema.fields().iter().zip(names).zip(kinds).enumerate() {
            if field.name() != name {
                return Err(format!(
                    "column {i} is {:?}, expected {name:?}",
                    field.name()
                ));
            }
            let a = batch.column(i);
            if a.data_type() != &kind.data_type() {
                return Err(format!(
                    "column {name:?} is {}, expected {}",
                    a.data_type(),
                    kind.data_type()
                ));
            }
            if a.null_count() > 0 {
                return Err(format!("column {name:?} has nulls"));
            }
            cols.push(match kind {
                Kind::U8 => Col::U8(prim::<UInt8Type>(a)),
                Kind::U16 => Col::U16(prim::<UInt16Type>(a)),
                Kind::U32 => Col::U32(prim::<UInt32Type>(a)),
                Kind::U64 => Col::U64(prim::<UInt64Type>(a)),
                Kind::I32 => Col::I32(prim::<Int32Type>(a)),
                Kind::F64 => Col::F64(prim::<Float64Type>(a)),
                Kind::Bool => Col::Bool(a.as_boolean()),
                Kind::Str => Col::Str(a.as_string::<i32>()),
                Kind::Uuid => Col::Uuid(a.as_fixed_size_binary()),
                Kind::StrList => Col::StrList(a.as_list::<i32>()),
                Kind::U32List => Col::U32List(a.as_list::<i32>()),
                Kind::F64List => Col::F64List(a.as_list::<i32>()),
                Kind::U32ListList => Col::U32ListList(a.as_list::<i32>()),
            });
        }
        cols.extend((present..kinds.len()).map(|_| Col::Absent));
        Ok(RowReader {
            cols,
            len: batch.num_rows(),
            row: 0,
            at: 0,
        })
    }

    /// Rows in the batch.
    pub fn rows(&self) -> usize {
        self.len
    }

    /// Moves to row `row`.
    pub fn seek(&mut self, row: usize) {
        self.row = row;
        self.at = 0;
    }

    get!(u8, U8, u8);
    get!(u16, U16, u16);
    get!(u32, U32, u32);
    get!(u64, U64, u64);
    get!(i32, I32, i32);
    get!(f64, F64, f64);
    get!(bool, Bool, bool);

    pub fn str(&mut self) -> String {
        let v = match &self.cols[self.at] {
            Col::Str(a) => a.value(self.row).to_string(),
            Col::Absent => String::new(),
            _ => unreachable!("column {} is not Str", self.at),
        };
        self.at += 1;
        v
    }

    pub fn uuid(&mut self) -> [u8; 16] {
        let v = match &self.cols[self.at] {
            Col::Uuid(a) => {
                let mut u = [0u8; 16];
                u.copy_from_slice(a.value(self.row));
                u
            }
            Col::Absent => [0u8; 16],
            _ => unreachable!("column {} is not Uuid", self.at),
        };
        self.at += 1;
        v
    }

    pub fn strs(&mut self) -> Vec<String> {
        let v = match &self.cols[self.at] {
            Col::StrList(a) => {
                let inner = a.value(self.row);
                let s = inner.as_string::<i32>();
                (0..s.len()).map(|i| s.value(i).to_string()).collect()
            }
            Col::Absent => Vec::new(),
            _ => unreachable!("column {} is not StrList", self.at),
        };
        self.at += 1;
        v
    }

    pub fn u32s(&mut self) -> Vec<u32> {
        let v = match &self.cols[self.at] {
            Col::U32List(a) => prim::<UInt32Type>(&a.value(self.row)).values().to_vec(),
            Col::Absent => Vec::new(),
            _ => unreachable!("column {} is not U32List", self.at),
        };
        self.at += 1;
        v
    }

    pub fn f64s(&mut self) -> Vec<f64> {
        let v = match &self.cols[self.at] {
            Col::F64List(a) => prim::<Float64Type>(&a.value(self.row)).values().to_vec(),
            Col::Absent => Vec::new(),
            _ => unreachable!("column {} is not F64List", self.at),
        };
        self.at += 1;
        v
    }

    pub fn u32_lists(&mut self) -> Vec<Vec<u32>> {
        let v = match &self.cols[self.at] {
            Col::U32ListList(a) => {
                let outer = a.value(self.row);
                let lists = outer.as_list::<i32>();
                (0..lists.len())
                    .map(|i| prim::<UInt32Type>(&lists.value(i)).values().to_vec())
                    .collect()
            }
            Col::Absent => Vec::new(),
            _ => unreachable!("column {} is not U32ListList", self.at),
        };
        self.at += 1;
        v
    }
}
