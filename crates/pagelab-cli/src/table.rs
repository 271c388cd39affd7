//! Column tables for the terminal (comfy-table): no borders, the leading name columns
//! left-aligned and the numbers right-aligned, two spaces between columns, never
//! wrapped to the terminal's width (a wide table scrolls; `--csv` and `--json` give the
//! same rows to programs).

use comfy_table::{presets::NOTHING, CellAlignment, ContentArrangement, Table};

/// A table being filled: its header, then rows of cells.
pub struct Columns {
    table: Table,
    /// How many leading columns are names (left-aligned).
    names: usize,
}

impl Columns {
    /// A table whose first column is a name and the others numbers.
    pub fn new<S: ToString>(header: impl IntoIterator<Item = S>) -> Columns {
        let mut table = Table::new();
        table
            .load_preset(NOTHING)
            .set_content_arrangement(ContentArrangement::Disabled)
            .set_header(header.into_iter().map(|h| h.to_string()));
        Columns { table, names: 1 }
    }

    /// The first `n` columns are names (left-aligned).
    pub fn names(mut self, n: usize) -> Columns {
        self.names = n;
        self
    }

    pub fn row<S: ToString>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.table
            .add_row(cells.into_iter().map(|c| c.to_string()).collect::<Vec<_>>());
    }

    /// The table as lines, each ending in a newline, without trailing blanks.
    pub fn render(mut self) -> String {
        let names = self.names;
        for (i, column) in self.table.column_iter_mut().enumerate() {
            column.set_padding((if i == 0 { 0 } else { 1 }, 1));
            column.set_cell_alignment(if i < names {
                CellAlignment::Left
            } else {
                CellAlignment::Right
            });
        }
        let mut out = String::new();
        for line in self.table.lines() {
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_left_numbers_right_no_borders() {
        let mut t = Columns::new(["structure", "refs", "bytes"]);
        t.row(["radix", "4.00", "8.0 MiB"]);
        t.row(["variable-radix", "2.00", "38.0 MiB"]);
        assert_eq!(
            t.render(),
            "structure       refs     bytes\n\
             radix           4.00   8.0 MiB\n\
             variable-radix  2.00  38.0 MiB\n"
        );
    }
}
