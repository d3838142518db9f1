#include <doppler/runtime/error.hpp>
#include <doppler/runtime/io.hpp>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace doppler {

std::string read_file(const std::string& path, std::size_t max_stream) {
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
  } else {  // pipes and special files report no size: read them in pieces, up to a limit
    in.clear();
    in.seekg(0, std::ios::beg);  // fails on a pipe (nothing read yet): clear that too
    in.clear();
    std::string piece(1 << 16, '\0');
    while (in.read(piece.data(), static_cast<std::streamsize>(piece.size())) || in.gcount() > 0) {
      text.append(piece.data(), static_cast<std::size_t>(in.gcount()));
      if (text.size() > max_stream)
        throw error(errc::io, path, "",
                    "more than " + std::to_string(max_stream) +
                        " bytes from a file that is not a regular file (a pipe or a device such as /dev/zero); "
                        "write it to a regular file first");
      if (in.eof()) break;
    }
  }
  if (in.bad()) throw error(errc::io, path, "", "read failed");
  return text;
}

namespace {

/// Follows `path` through symlinks (relative targets are taken from the link's directory) to the
/// file it finally names, which need not exist; a loop of links is an error naming `path`.
std::filesystem::path resolve_symlinks(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p(path);
  for (int hops = 0;; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) return p;
    if (hops == 40) throw error(errc::io, path, "", "too many levels of symbolic links");
    fs::path next = fs::read_symlink(p, ec);
    if (ec) throw error(errc::io, path, "", "cannot read symbolic link: " + ec.message());
    p = next.is_absolute() ? next : p.parent_path() / next;
  }
}

/// Writes all of `text` to `fd`; returns 0 or the errno of the failed write.
int write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return 0;
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view text) {
  if (path.empty()) throw error(errc::io, "", "", "an empty output path (give a file name, or - for stdout)");
  if (path == "-") {
    std::cout.write(text.data(), static_cast<std::streamsize>(text.size()));
    std::cout.flush();
    if (!std::cout) throw error(errc::io, "<stdout>", "", "write failed");
    return;
  }
  namespace fs = std::filesystem;
  fs::path target = resolve_symlinks(path);
  struct stat st {};
  bool exists = ::stat(target.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) throw error(errc::io, path, "", "is a directory, not a file");
  if (exists && !S_ISREG(st.st_mode)) {
    // A FIFO, a device or a socket: there is nothing to replace atomically, so write to it directly.
    int fd = ::open(target.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) throw error(errc::io, path, "", std::string("cannot open for writing: ") + std::strerror(errno));
    int err = write_all(fd, text);
    if (::close(fd) != 0 && err == 0) err = errno;
    if (err != 0) throw error(errc::io, path, "", std::string("write failed: ") + std::strerror(err));
    return;
  }
  // A regular file (or nothing yet): a temporary file beside the final target, then rename, so a
  // reader sees the old or the new contents, never a mix. A symlink stays a symlink to the new file.
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::random_device rd;
  fs::path tmp = dir / ("." + target.filename().string() + ".tmp" + std::to_string(::getpid()) + "-" +
                        std::to_string(rd()));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) throw error(errc::io, path, "", std::string("cannot create: ") + std::strerror(errno));
  if (exists) (void)::fchmod(fd, st.st_mode & 07777);  // keep the replaced file's permissions
  int err = write_all(fd, text);
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    throw error(errc::io, path, "", std::string("write failed: ") + std::strerror(err));
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    err = errno;
    ::unlink(tmp.c_str());
    throw error(errc::io, path, "", std::string("cannot rename temporary file into place: ") + std::strerror(err));
  }
}

std::string utf8_replaced(std::string_view s) {
  const auto quoted = nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return nlohmann::json::parse(quoted).get<std::string>();
}

}  // namespace doppler
