//! Plain-text tables (Markdown pipe tables, so they read well in a terminal and paste into docs).

/// A table: a header and rows of cells, first column left-aligned, the others right-aligned.
pub struct TextTable {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl TextTable {
    /// A table with these column names.
    pub fn new(header: &[&str]) -> Self {
        Self {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row (missing cells are blank).
    pub fn row(&mut self, cells: Vec<String>) -> &mut Self {
        self.rows.push(cells);
        self
    }

    /// The table as text, one line per row, ending in a newline.
    pub fn render(&self) -> String {
        let n = self.header.len();
        let mut width: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (w, c) in width.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        let line = |cells: &[String]| -> String {
            let mut s = String::from("|");
            for (i, w) in width.iter().enumerate().take(n) {
                let c = cells.get(i).map(String::as_str).unwrap_or("");
                let pad = w - c.chars().count();
                if i == 0 {
                    s += &format!(" {c}{} |", " ".repeat(pad));
                } else {
                    s += &format!(" {}{c} |", " ".repeat(pad));
                }
            }
            s + "\n"
        };
        let mut out = line(&self.header);
        out += "|";
        for (i, w) in width.iter().enumerate() {
            out += &if i == 0 {
                format!("{}|", "-".repeat(w + 2))
            } else {
                format!("{}:|", "-".repeat(w + 1))
            };
        }
        out += "\n";
        for r in &self.rows {
            out += &line(r);
        }
        out
    }
}

/// `mean +- std` with three decimals.
pub fn pm(mean: f64, std: f64) -> String {
    format!("{mean:.3} ± {std:.3}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up() {
        let mut t = TextTable::new(&["row", "value"]);
        t.row(vec!["PCA + ICA".into(), "1.0".into()])
            .row(vec!["B".into(), "0.25".into()]);
        assert_eq!(
            t.render(),
            "| row       | value |\n|-----------|------:|\n| PCA + ICA |   1.0 |\n| B         |  0.25 |\n"
        );
    }
}
