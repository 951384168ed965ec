#include "npy.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>

#include "bad_input.hpp"
#include "input_file.hpp"
#include "npy_header.hpp"

namespace flashsinkhorn::cli {
namespace {

constexpr std::array<char, 6> kMagic = {'\x93', 'N', 'U', 'M', 'P', 'Y'};
constexpr std::size_t kPreludeBytes = 8;  // magic + major + minor
constexpr std::uint64_t kHeaderAlignment = 64;

struct element_format {
  dtype type = dtype::float64;
  bool swap_bytes = false;  // stored in the other byte order than this machine's
};

element_format element_format_of(const std::string& descr, const std::string& name) {
  const bool recognised = descr.size() == 3 && (descr[0] == '<' || descr[0] == '>' ||
                                                descr[0] == '=' || descr[0] == '|') &&
                          descr[1] == 'f' && (descr[2] == '4' || descr[2] == '8');
  if (!recognised || descr[0] == '|') {
    throw bad_input(name + ": dtype " + descr + " is not supported; use float32 or float64");
  }
  element_format format;
  format.type = descr[2] == '4' ? dtype::float32 : dtype::float64;
  const bool stored_little = descr[0] == '<' || (descr[0] == '=' && std::endian::native == std::endian::little);
  format.swap_bytes = stored_little != (std::endian::native == std::endian::little);
  return format;
}

template <class Word>
void reverse_bytes(std::span<Word> words) {
  for (Word& word : words) {
    auto bytes = std::bit_cast<std::array<unsigned char, sizeof(Word)>>(word);
    std::reverse(bytes.begin(), bytes.end());
    word = std::bit_cast<Word>(bytes);
  }
}

template <class T>
void read_values(std::istream& in, std::vector<T>& values, std::uint64_t count, bool swap_bytes,
                 const std::string& name) {
  values.resize(static_cast<std::size_t>(count));
  const auto bytes = static_cast<std::streamsize>(count * sizeof(T));
  in.read(reinterpret_cast<char*>(values.data()), bytes);
  if (in.gcount() != bytes) throw bad_input(name + ": truncated .npy (read error in the data)");
  if (swap_bytes) reverse_bytes(std::span<T>(values));
}

std::uint64_t read_little_endian(const unsigned char* bytes, int count) {
  std::uint64_t value = 0;
  for (int i = count - 1; i >= 0; --i) value = (value << 8) | bytes[i];
  return value;
}

}  // namespace

loaded_array read_npy(std::istream& in, std::uint64_t byte_count, const std::string& name) {
  std::array<unsigned char, kPreludeBytes + 4> prelude{};
  if (byte_count < kPreludeBytes + 2) throw bad_input(name + ": not a .npy file (too short)");
  in.read(reinterpret_cast<char*>(prelude.data()), kPreludeBytes);
  if (in.gcount() != static_cast<std::streamsize>(kPreludeBytes) ||
      !std::equal(kMagic.begin(), kMagic.end(), prelude.begin(),
                  [](char m, unsigned char b) { return static_cast<unsigned char>(m) == b; })) {
    throw bad_input(name + ": not a .npy file (bad magic bytes)");
  }
  const int major = prelude[6];
  if (major < 1 || major > 3) {
    throw bad_input(name + ": unsupported .npy format version " + std::to_string(major) + "." +
                    std::to_string(prelude[7]));
  }
  const int length_bytes = major == 1 ? 2 : 4;
  in.read(reinterpret_cast<char*>(prelude.data() + kPreludeBytes), length_bytes);
  if (in.gcount() != length_bytes) throw bad_input(name + ": truncated .npy header");
  const std::uint64_t header_bytes = read_little_endian(prelude.data() + kPreludeBytes, length_bytes);
  const std::uint64_t data_offset = kPreludeBytes + static_cast<std::uint64_t>(length_bytes) + header_bytes;
  if (data_offset > byte_count) throw bad_input(name + ": truncated .npy header");

  std::string header_text(static_cast<std::size_t>(header_bytes), '\0');
  in.read(header_text.data(), static_cast<std::streamsize>(header_bytes));
  if (in.gcount() != static_cast<std::streamsize>(header_bytes)) {
    throw bad_input(name + ": truncated .npy header");
  }
  const npy_header header = parse_npy_header_dict(header_text, name);
  const element_format format = element_format_of(header.descr, name);
  if (header.fortran_order) {
    throw bad_input(name + ": Fortran-ordered arrays are not supported; save a C-ordered array "
                    "(numpy.ascontiguousarray)");
  }

  const std::uint64_t element_bytes = format.type == dtype::float32 ? 4 : 8;
  std::uint64_t count = 1;
  for (const std::int64_t extent : header.shape) {
    const auto e = static_cast<std::uint64_t>(extent);
    if (e != 0 && count > std::numeric_limits<std::uint64_t>::max() / element_bytes / e) {
      throw bad_input(name + ": shape " + shape_string(header.shape) + " is too large");
    }
    count *= e;
  }
  const std::uint64_t data_bytes = byte_count - data_offset;
  if (count * element_bytes > data_bytes) {
    throw bad_input(name + ": truncated .npy: shape " + shape_string(header.shape) + " needs " +
                    std::to_string(count * element_bytes) + " bytes of data but the file has " +
                    std::to_string(data_bytes));
  }
  if (count * element_bytes < data_bytes) {
    throw bad_input(name + ": malformed .npy: " + std::to_string(data_bytes - count * element_bytes) +
                    " bytes after the data that shape " + shape_string(header.shape) + " declares");
  }

  loaded_array array;
  array.shape = header.shape;
  array.type = format.type;
  if (format.type == dtype::float32) {
    read_values(in, array.values_f32, count, format.swap_bytes, name);
  } else {
    read_values(in, array.values_f64, count, format.swap_bytes, name);
  }
  return array;
}

loaded_array read_npy_file(const std::filesystem::path& path) {
  opened_file file = open_input_file(path);
  return read_npy(file.stream, file.size, path.string());
}

std::string encode_npy(std::span<const double> values, const std::vector<std::int64_t>& shape,
                       dtype stored_as) {
  static_assert(std::endian::native == std::endian::little, "the writer emits '<' dtypes");
  npy_header header;
  header.descr = stored_as == dtype::float32 ? "<f4" : "<f8";
  header.shape = shape;
  std::string dict = format_npy_header_dict(header);
  // Pad with spaces so that magic + version + length + dict + '\n' is a multiple of 64 bytes.
  const std::size_t unpadded = kPreludeBytes + 2 + dict.size() + 1;
  dict.append((kHeaderAlignment - unpadded % kHeaderAlignment) % kHeaderAlignment, ' ');
  dict += '\n';

  std::string bytes(kMagic.begin(), kMagic.end());
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(dict.size() & 0xff);
  bytes += static_cast<char>((dict.size() >> 8) & 0xff);
  bytes += dict;
  const std::size_t data_start = bytes.size();
  if (stored_as == dtype::float32) {
    bytes.resize(data_start + values.size() * sizeof(float));
    for (std::size_t i = 0; i < values.size(); ++i) {
      const auto value = static_cast<float>(values[i]);
      std::memcpy(bytes.data() + data_start + i * sizeof(float), &value, sizeof(float));
    }
  } else {
    bytes.resize(data_start + values.size() * sizeof(double));
    std::memcpy(bytes.data() + data_start, values.data(), values.size() * sizeof(double));
  }
  return bytes;
}

}  // namespace flashsinkhorn::cli
