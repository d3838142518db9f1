#include <doppler/runtime/error.hpp>
#include <doppler/runtime/io.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include <unistd.h>

namespace doppler {

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw error(errc::io, path, "", "is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error(errc::io, path, "", std::string("cannot open: ") + std::strerror(errno));
  std::string text;
  in.seekg(0, std::ios::end);
  auto size = in.tellg();
  if (size > 0) {
    text.resize(static_cast<std::size_t>(size));
    in.seekg(0, std::ios::beg);
    in.read(text.data(), size);
  } else {  // pipes and special files report no size
    in.clear();
    in.seekg(0, std::ios::beg);
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  if (in.bad()) throw error(errc::io, path, "", "read failed");
  return text;
}

void write_file_atomic(const std::string& path, std::string_view text) {
  if (path == "-") {
    std::cout.write(text.data(), static_cast<std::streamsize>(text.size()));
    std::cout.flush();
    return;
  }
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::random_device rd;
  fs::path tmp = dir / ("." + target.filename().string() + ".tmp" + std::to_string(::getpid()) + "-" +
                        std::to_string(rd()));
  {
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) throw error(errc::io, path, "", std::string("cannot create: ") + std::strerror(errno));
    bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    ok = (std::fflush(f) == 0) && ok;
    ok = (::fsync(::fileno(f)) == 0) && ok;
    ok = (std::fclose(f) == 0) && ok;
    if (!ok) {
      std::error_code ignore;
      fs::remove(tmp, ignore);
      throw error(errc::io, path, "", std::string("write failed: ") + std::strerror(errno));
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignore;
    fs::remove(tmp, ignore);
    throw error(errc::io, path, "", "cannot rename temporary file into place: " + ec.message());
  }
}

}  // namespace doppler
