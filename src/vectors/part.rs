//! One part's arrays ([`SketchPart`]) and the checks of their shapes.

use super::codes::*;
use super::quant::*;
use crate::{Error, Result};

/// One part's arrays (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct SketchPart<'a> {
    /// Sign codes, `n * words_for(dim)` words.
    pub codes: &'a [u64],
    /// Unit rows, `n * dim` values.
    pub vectors: &'a [f32],
    /// The centre the codes and the 4-bit rows were made around, `dim` values.
    pub centre: &'a [f32],
    /// Centred rows quantised to 4 bits by [`sketch_int4`], `n * int4_bytes(dim)` bytes.
    pub int4: &'a [u8],
    /// The per-dimension scales of `int4`, `dim` values.
    pub scales: &'a [f32],
    /// The dimension.
    pub dim: usize,
}

impl SketchPart<'_> {
    /// Checks the shapes of every array. Returns `n`.
    pub(super) fn rows(&self) -> Result<usize> {
        let n = part_rows(self.vectors, Some(self.codes), self.centre, self.dim)?;
        for (column, got, expected) in [
            ("int4", self.int4.len(), n * int4_bytes(self.dim)),
            ("scales", self.scales.len(), self.dim),
        ] {
            if got != expected {
                return Err(Error::LengthMismatch {
                    table: "sketch",
                    column,
                    expected,
                    got,
                });
            }
        }
        Ok(n)
    }
}

/// Checks the shapes of a part: `vectors` holds `n * dim` finite-length rows, `codes`
/// `n * words_for(dim)` words, `centre` `dim` values. Returns `n`.
pub(super) fn part_rows(
    vectors: &[f32],
    codes: Option<&[u64]>,
    centre: &[f32],
    dim: usize,
) -> Result<usize> {
    if dim == 0 {
        return Err(Error::param("dim", "the vectors have dimension 0"));
    }
    if !vectors.len().is_multiple_of(dim) {
        return Err(Error::param(
            "vectors",
            format!(
                "{} values are not whole rows of dimension {dim}",
                vectors.len()
            ),
        ));
    }
    let n = vectors.len() / dim;
    if centre.len() != dim {
        return Err(Error::LengthMismatch {
            table: "sketch",
            column: "centre",
            expected: dim,
            got: centre.len(),
        });
    }
    if let Some(codes) = codes {
        let expected = n * words_for(dim);
        if codes.len() != expected {
            return Err(Error::LengthMismatch {
                table: "sketch",
                column: "codes",
                expected,
                got: codes.len(),
            });
        }
    }
    Ok(n)
}
