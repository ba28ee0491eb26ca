// examples/prefill/npy.hpp -- reading and writing NumPy .npy files, optionally gzip-compressed (.npy.gz),
// for the prefill example. Format: docs/file-format.md; NumPy's specification:
// https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
//
// Supported: format versions 1.0, 2.0 and 3.0; C order only; dtypes '<u2' (uint16 holding bfloat16 bit patterns,
// zyfa's convention for bf16 data), '<f2' (IEEE half), '<f4' (IEEE float). Reading goes through zlib's
// gzopen/gzread, which reads gzip-compressed and plain files alike; writing compresses when the path ends in ".gz".
// Assumes a little-endian host (x86-64, AArch64), as the '<' in the dtypes says.
#pragma once
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include <zyfa/numeric/bf16.hpp>
#include <zyfa/numeric/bit_cast.hpp>

namespace zyfa_example {

/// Largest array read_npy accepts: 16 GiB of data (numel(shape) * itemsize bytes). A header claiming more, or
/// a shape whose byte count overflows 64 bits, is rejected as "shape too large" before anything is allocated.
inline constexpr std::int64_t kNpyMaxBytes = std::int64_t{1} << 34;

/// An n-dimensional array as stored in a .npy file: `descr` is NumPy's dtype string ("<u2", "<f2", "<f4"),
/// `shape` in elements (C order, last dim fastest), `bytes` the raw little-endian data.
struct NpyArray {
  std::string descr;
  std::vector<std::int64_t> shape;
  std::vector<unsigned char> bytes;

  /// Number of elements, the product of `shape` (1 for a 0-d array). Only meaningful for shapes read_npy
  /// accepted (their byte count fits kNpyMaxBytes, so this cannot overflow).
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (std::int64_t s : shape) n *= s;
    return n;
  }
};

/// Size in bytes of one element of a supported dtype string, or 0 if unsupported.
inline int npy_itemsize(const std::string& descr) {
  if (descr == "<u2" || descr == "<f2") return 2;
  if (descr == "<f4") return 4;
  return 0;
}

/// IEEE binary16 bit pattern -> float (exact; subnormals, inf and NaN preserved).
inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
  std::uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (man << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {  // subnormal half: normalize
    int e = -1;
    do {
      ++e;
      man <<= 1;
    } while ((man & 0x400u) == 0);
    bits = sign | ((112u - static_cast<std::uint32_t>(e)) << 23) | ((man & 0x3FFu) << 13);
  }
  return zyfa::float_from_bits(bits);
}

namespace detail {

// Value of key `key` in a .npy header dict (Python literal), e.g. "'<u2'" or "(1, 256, 4, 128)"; "" if absent.
// Whitespace is allowed around the ':' and ','; a bare value (False) is returned without it.
inline std::string header_value(const std::string& h, const std::string& key) {
  const std::size_t k = h.find("'" + key + "'");
  if (k == std::string::npos) return "";
  std::size_t p = k + key.size() + 2;
  while (p < h.size() && (h[p] == ' ' || h[p] == '\t')) ++p;
  if (p >= h.size() || h[p] != ':') return "";
  ++p;
  while (p < h.size() && (h[p] == ' ' || h[p] == '\t')) ++p;
  if (p >= h.size()) return "";
  std::size_t e;
  if (h[p] == '(') {
    e = h.find(')', p);
    return e == std::string::npos ? "" : h.substr(p, e - p + 1);
  }
  if (h[p] == '\'' || h[p] == '"') {
    e = h.find(h[p], p + 1);
    return e == std::string::npos ? "" : h.substr(p + 1, e - p - 1);
  }
  e = h.find_first_of(",}", p);
  std::string v = h.substr(p, e == std::string::npos ? std::string::npos : e - p);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.pop_back();
  return v;
}

// Parses a .npy shape tuple as NumPy writes it: "()", "(5,)", "(2, 3)", also "(2, 3,)" (trailing comma) and
// extra spaces. Dimensions are non-negative decimal integers separated by commas; anything else (missing or
// doubled commas, signs, other characters, a value above 2^63-1) fails. Returns "" or the reason.
inline std::string parse_shape(const std::string& t, std::vector<std::int64_t>* shape) {
  auto space = [&](std::size_t& p) {
    while (p < t.size() && (t[p] == ' ' || t[p] == '\t')) ++p;
  };
  if (t.size() < 2 || t.front() != '(' || t.back() != ')') return "shape " + t + " is not a tuple";
  std::size_t p = 1;
  const std::size_t end = t.size() - 1;
  space(p);
  while (p < end) {
    if (t[p] < '0' || t[p] > '9') return "cannot parse shape " + t + " (expected a dimension at '" + t.substr(p) + "')";
    std::int64_t v = 0;
    for (; p < end && t[p] >= '0' && t[p] <= '9'; ++p) {
      const int digit = t[p] - '0';
      if (v > (INT64_MAX - digit) / 10) return "shape too large: dimension in " + t + " exceeds 2^63-1";
      v = v * 10 + digit;
    }
    shape->push_back(v);
    space(p);
    if (p == end) {
      if (shape->size() == 1) return "cannot parse shape " + t + " (a 1-D shape is written (n,))";
      break;
    }
    if (t[p] != ',') return "cannot parse shape " + t + " (expected ',' between dimensions)";
    ++p;
    space(p);
  }
  return "";
}

// numel(shape) * itemsize with overflow checks: "" and *nbytes, or "shape too large: ..." if it overflows or
// exceeds kNpyMaxBytes.
inline std::string checked_nbytes(const std::vector<std::int64_t>& shape, int itemsize, std::int64_t* nbytes) {
  std::string dims = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
  dims += shape.size() == 1 ? ",)" : ")";
  std::int64_t n = itemsize;
  bool zero = false;
  for (std::int64_t s : shape) zero = zero || s == 0;
  if (!zero)
    for (std::int64_t s : shape) {
      if (s > kNpyMaxBytes / n)
        return "shape too large: " + dims + " of " + std::to_string(itemsize) +
               "-byte elements is more than the 16 GiB limit (" + std::to_string(kNpyMaxBytes) + " bytes)";
      n *= s;
    }
  *nbytes = zero ? 0 : n;
  return "";
}

}  // namespace detail

/// Reads `path` (.npy or gzip-compressed .npy.gz) into `*out`. Returns "" on success, else an error message
/// starting with the path: unreadable file, bad magic, unsupported version/dtype, Fortran order, a malformed
/// shape, "shape too large" (byte count overflows or exceeds kNpyMaxBytes = 16 GiB), truncated data. Memory
/// use is bounded by the data actually present (see the chunked read below), not by what the header claims.
inline std::string read_npy(const std::string& path, NpyArray* out) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return path + ": cannot open";
  auto fail = [&](const std::string& m) {
    gzclose(f);
    return path + ": " + m;
  };
  auto read_exact = [&](void* dst, unsigned n) { return gzread(f, dst, n) == static_cast<int>(n); };
  unsigned char pre[8];
  if (!read_exact(pre, 8) || std::memcmp(pre, "\x93NUMPY", 6) != 0) return fail("not a .npy file (bad magic)");
  const int major = pre[6];
  std::uint32_t hlen = 0;
  if (major == 1) {
    unsigned char l[2];
    if (!read_exact(l, 2)) return fail("truncated header");
    hlen = l[0] | (l[1] << 8);
  } else if (major == 2 || major == 3) {
    unsigned char l[4];
    if (!read_exact(l, 4)) return fail("truncated header");
    hlen = l[0] | (l[1] << 8) | (l[2] << 16) | (static_cast<std::uint32_t>(l[3]) << 24);
  } else {
    return fail("unsupported .npy format version " + std::to_string(major));
  }
  if (hlen > (1u << 20)) return fail("header too large");
  std::string h(hlen, '\0');
  if (!read_exact(&h[0], hlen)) return fail("truncated header");

  NpyArray a;
  a.descr = detail::header_value(h, "descr");
  if (a.descr == "|u2" || a.descr == "=u2") a.descr = "<u2";
  if (npy_itemsize(a.descr) == 0)
    return fail("dtype '" + a.descr + "' is not supported (use '<u2' holding bf16 bits, '<f2' or '<f4')");
  if (detail::header_value(h, "fortran_order") != "False") return fail("Fortran-order arrays are not supported");
  const std::string shp = detail::header_value(h, "shape");
  if (shp.empty()) return fail("header has no shape");
  if (std::string e = detail::parse_shape(shp, &a.shape); !e.empty()) return fail(e);
  std::int64_t nbytes = 0;
  if (std::string e = detail::checked_nbytes(a.shape, npy_itemsize(a.descr), &nbytes); !e.empty()) return fail(e);
  const std::string truncated =
      "truncated data (the header's shape " + shp + " needs " + std::to_string(nbytes) + " bytes";
  // Never allocate more than the file holds. A plain file: compare with its size first. A compressed one:
  // read in chunks of at most 1 MiB, growing the buffer geometrically (capped at nbytes), so a short stream
  // fails after allocating at most about twice what it actually held.
  if (gzdirect(f) == 1) {
    std::error_code ec;
    const std::uintmax_t size = std::filesystem::file_size(path, ec);
    const std::int64_t data_at = 8 + (major == 1 ? 2 : 4) + static_cast<std::int64_t>(hlen);
    if (!ec && static_cast<std::int64_t>(size) - data_at < nbytes)
      return fail(truncated + ", the file holds " + std::to_string(static_cast<std::int64_t>(size) - data_at) + ")");
    if (!ec) a.bytes.reserve(static_cast<std::size_t>(nbytes));
  }
  constexpr std::int64_t kChunk = std::int64_t{1} << 20;
  std::int64_t done = 0;
  while (done < nbytes) {
    if (static_cast<std::int64_t>(a.bytes.capacity()) == done)
      a.bytes.reserve(static_cast<std::size_t>(std::min(nbytes, std::max<std::int64_t>(2 * done, kChunk))));
    const std::int64_t n = std::min({nbytes - done, kChunk, static_cast<std::int64_t>(a.bytes.capacity()) - done});
    a.bytes.resize(static_cast<std::size_t>(done + n));
    const int got = gzread(f, a.bytes.data() + done, static_cast<unsigned>(n));
    if (got != static_cast<int>(n))
      return fail(truncated + ", the data ends after " + std::to_string(done + std::max(got, 0)) + ")");
    done += n;
  }
  gzclose(f);
  *out = std::move(a);
  return "";
}

/// Writes a C-order array as .npy format 1.0 (gzip-compressed when `path` ends in ".gz"). `descr` is a supported
/// dtype string, `data` holds numel(shape) * itemsize bytes, little-endian. Returns "" or an error message.
inline std::string write_npy(const std::string& path, const std::string& descr, const std::vector<std::int64_t>& shape,
                             const void* data) {
  if (npy_itemsize(descr) == 0) return path + ": cannot write dtype '" + descr + "'";
  std::string dims;
  std::int64_t n = 1;
  for (std::int64_t s : shape) {
    dims += std::to_string(s) + ", ";
    n *= s;
  }
  if (shape.size() > 1)
    dims.erase(dims.size() - 2);  // "(a, b)"; a 1-D shape keeps its comma: "(a,)"
  else if (!shape.empty())
    dims.erase(dims.size() - 1);
  std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  while ((10 + h.size() + 1) % 64 != 0) h += ' ';  // pad so the data starts 64-byte aligned
  h += '\n';
  std::string pre = std::string("\x93NUMPY\x01\x00", 8);
  pre += static_cast<char>(h.size() & 0xFF);
  pre += static_cast<char>((h.size() >> 8) & 0xFF);
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  gzFile f = gzopen(path.c_str(), gz ? "wb6" : "wbT");  // "T": plain (transparent) write
  if (f == nullptr) return path + ": cannot create";
  const std::int64_t nbytes = n * npy_itemsize(descr);
  bool ok = gzwrite(f, pre.data(), static_cast<unsigned>(pre.size())) == static_cast<int>(pre.size()) &&
            gzwrite(f, h.data(), static_cast<unsigned>(h.size())) == static_cast<int>(h.size());
  for (std::int64_t done = 0; ok && done < nbytes;) {
    const unsigned chunk = static_cast<unsigned>(std::min<std::int64_t>(nbytes - done, 1 << 30));
    ok = gzwrite(f, static_cast<const unsigned char*>(data) + done, chunk) == static_cast<int>(chunk);
    done += chunk;
  }
  if (gzclose(f) != Z_OK || !ok) return path + ": write failed";
  return "";
}

/// Element values of a supported array as float: '<u2' is read as bf16 bit patterns, '<f2' as IEEE half,
/// '<f4' as float (all conversions exact).
inline std::vector<float> npy_to_float(const NpyArray& a) {
  const std::int64_t n = a.numel();
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    if (a.descr == "<f4") {
      std::uint32_t u;
      std::memcpy(&u, a.bytes.data() + 4 * i, 4);
      v[i] = zyfa::float_from_bits(u);
    } else {
      std::uint16_t u;
      std::memcpy(&u, a.bytes.data() + 2 * i, 2);
      v[i] = a.descr == "<u2" ? zyfa::bf16_to_float(u) : half_to_float(u);
    }
  }
  return v;
}

}  // namespace zyfa_example
