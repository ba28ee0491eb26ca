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
#include <string>
#include <vector>

#include <zyfa/numeric/bf16.hpp>
#include <zyfa/numeric/bit_cast.hpp>

namespace zyfa_example {

/// An n-dimensional array as stored in a .npy file: `descr` is NumPy's dtype string ("<u2", "<f2", "<f4"),
/// `shape` in elements (C order, last dim fastest), `bytes` the raw little-endian data.
struct NpyArray {
  std::string descr;
  std::vector<std::int64_t> shape;
  std::vector<unsigned char> bytes;

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
inline std::string header_value(const std::string& h, const std::string& key) {
  const std::size_t k = h.find("'" + key + "'");
  if (k == std::string::npos) return "";
  std::size_t p = h.find(':', k);
  if (p == std::string::npos) return "";
  ++p;
  while (p < h.size() && h[p] == ' ') ++p;
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
  return h.substr(p, e == std::string::npos ? std::string::npos : e - p);
}

}  // namespace detail

/// Reads `path` (.npy or gzip-compressed .npy.gz) into `*out`. Returns "" on success, else an error message
/// starting with the path (unreadable file, bad magic, unsupported version/dtype, Fortran order, truncated data).
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
  for (std::size_t p = 1; p < shp.size();) {
    while (p < shp.size() && (shp[p] == ' ' || shp[p] == ',')) ++p;
    if (p >= shp.size() || shp[p] == ')') break;
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(shp.substr(p), &used);
    } catch (...) {
      return fail("cannot parse shape " + shp);
    }
    if (v < 0) return fail("negative dimension in shape " + shp);
    a.shape.push_back(v);
    p += used;
  }
  const std::int64_t nbytes = a.numel() * npy_itemsize(a.descr);
  if (nbytes > (std::int64_t{1} << 34)) return fail("array larger than 16 GiB");
  a.bytes.resize(static_cast<std::size_t>(nbytes));
  std::int64_t done = 0;
  while (done < nbytes) {
    const unsigned chunk = static_cast<unsigned>(std::min<std::int64_t>(nbytes - done, 1 << 30));
    if (!read_exact(a.bytes.data() + done, chunk)) return fail("truncated data (expected " + std::to_string(nbytes) + " bytes)");
    done += chunk;
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
  if (shape.size() > 1) dims.erase(dims.size() - 2);  // "(a, b)"; a 1-D shape keeps its comma: "(a,)"
  else if (!shape.empty()) dims.erase(dims.size() - 1);
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
