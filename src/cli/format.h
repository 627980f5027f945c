#pragma once
// Text formatting for kubectl-berth's tables: human durations, block bars, aligned columns, and
// text from the API made safe for a terminal.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/clock.h"

namespace berth::cli {

// Whether a text may keep its line breaks when printed.
enum class TextLines {
  kOne,   // a table cell or one line: a line break or tab becomes a space
  kMany,  // a block of lines (a description): \n and \t are kept
};
// Text from the API (names, messages, reasons, Events: other tenants write them, issue 44) as it
// may reach a terminal: no control characters that a terminal acts on. Removed: C0 (U+0000-
// U+001F, but \n and \t with TextLines::kMany; with kOne they become a space, \r is removed),
// DEL (U+007F) and C1 (U+0080-U+009F, as UTF-8 or as a lone byte); a byte that is not part of
// valid UTF-8 becomes '?'. So ESC sequences, BEL, OSC and CSI cannot drive the reader's terminal.
// Every print of API text goes through it: the tables (Table cells) and every view as printed.
std::string Printable(std::string_view text, TextLines lines = TextLines::kOne);
// JSON text as printed (`-o json`): DEL and C1 inside its strings written as \u007f and
// \u0080-\u009f (the encoder escapes C0 already), so the JSON value is the same and no control
// character reaches the terminal raw. Only strings hold bytes >= 0x7f in JSON text.
std::string PrintableJson(std::string_view json);

// A duration as kubectl shows ages (apimachinery's duration.HumanDuration): "45s", "3m12s",
// "42m", "3h12m", "20h", "2d5h", "45d", "1y30d", "5y". Negative durations are "0s".
std::string HumanDuration(std::chrono::seconds d);

// Block usage as a bar: "[####....] 4/8". The bar has one cell per block up to `max_cells`
// blocks; beyond that each cell stands for several blocks, and the bar never looks empty while a
// block is busy nor full while one is free. No blocks at all: "[] 0/0".
std::string BlockBar(int64_t busy, int64_t total, int max_cells = 16);

// Hours with one decimal, as usage is shown ("131.5").
std::string Hours(double h);

// `text` cut at each `sep` ("s1/a" -> {"s1", "a"}; "" -> {}).
std::vector<std::string> Split(std::string_view text, char sep);

// An instance's expiry relative to `now`: "-" (none or unreadable), "expired", "in 3h12m".
std::string RelativeExpiry(const std::string& expires_at_rfc3339, k8s::TimePoint now);

// Columns separated by three spaces, each as wide as its widest cell; no trailing spaces. Every
// line starts with `indent`.
class Table {
 public:
  // Cells are made Printable (one line each) as they are added: widths count what is printed.
  explicit Table(std::vector<std::string> header) { AddRow(std::move(header)); }
  void AddRow(std::vector<std::string> row) {
    for (std::string& cell : row) cell = Printable(cell, TextLines::kOne);
    rows_.push_back(std::move(row));
  }
  size_t rows() const { return rows_.size() - 1; }  // without the header
  std::string Render(const std::string& indent = {}) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace berth::cli
