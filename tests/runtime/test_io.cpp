// read_file and write_file_atomic: symlinks are written through (the link survives), FIFOs and other
// non-regular targets are written directly, and failures name the path.
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/io.hpp>

#include "../temp_dir.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <string>

using namespace doppler;
namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& f) {
  std::ifstream in(f);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("write_file_atomic: a new file, then a replacement of a regular file") {
  temp_dir d("doppler_io");
  write_file_atomic(d / "a.json", "one\n");
  CHECK(slurp(d / "a.json") == "one\n");
  write_file_atomic(d / "a.json", "two\n");
  CHECK(slurp(d / "a.json") == "two\n");
  // No temporary files are left behind.
  int entries = 0;
  for ([[maybe_unused]] auto& e : fs::directory_iterator(d.path)) ++entries;
  CHECK(entries == 1);
}

TEST_CASE("write_file_atomic: a symlink is followed and kept, relative and dangling targets too") {
  temp_dir d("doppler_io");
  fs::create_directories(d.path / "real");
  fs::create_directories(d.path / "lnk");
  std::ofstream(d / "real/target.json") << "old\n";
  fs::create_symlink("../real/target.json", d.path / "lnk/link.json");
  write_file_atomic(d / "lnk/link.json", "new\n");
  CHECK(fs::is_symlink(fs::symlink_status(d.path / "lnk/link.json")));
  CHECK(fs::read_symlink(d.path / "lnk/link.json") == "../real/target.json");
  CHECK(slurp(d / "real/target.json") == "new\n");

  // A link to a link to a file that does not exist yet: the file is created where the chain ends.
  fs::create_symlink(d.path / "real/fresh.json", d.path / "hop2");
  fs::create_symlink("hop2", d.path / "hop1");
  write_file_atomic(d / "hop1", "fresh\n");
  CHECK(fs::is_symlink(fs::symlink_status(d.path / "hop1")));
  CHECK(fs::is_symlink(fs::symlink_status(d.path / "hop2")));
  CHECK(slurp(d / "real/fresh.json") == "fresh\n");

  // A loop of links is an error naming the path, not a hang.
  fs::create_symlink("loopb", d.path / "loopa");
  fs::create_symlink("loopa", d.path / "loopb");
  try {
    write_file_atomic(d / "loopa", "x");
    FAIL("expected an error");
  } catch (const error& e) {
    CHECK(e.code() == errc::io);
    CHECK(e.file() == d / "loopa");
  }
}

TEST_CASE("write_file_atomic: a FIFO is written to, not replaced") {
  temp_dir d("doppler_io");
  std::string fifo = d / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto reader = std::async(std::launch::async, [&] { return slurp(fifo); });
  write_file_atomic(fifo, "through the pipe\n");
  CHECK(reader.get() == "through the pipe\n");
  struct stat st {};
  REQUIRE(::lstat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
}

TEST_CASE("write_file_atomic: failures name the path") {
  temp_dir d("doppler_io");
  fs::create_directories(d.path / "dir");
  for (std::string p : {d / "dir", d / "no/such/dir/f.json"}) {
    CAPTURE(p);
    try {
      write_file_atomic(p, "x");
      FAIL("expected an error");
    } catch (const error& e) {
      CHECK(e.code() == errc::io);
      CHECK(e.file() == p);
    }
  }
  CHECK(fs::is_directory(d.path / "dir"));
  CHECK_THROWS_WITH_AS(write_file_atomic("", "x"), doctest::Contains("empty output path"), error);  // was a rename failure
}

TEST_CASE("read_file: a pipe is read whole, an endless device is an error naming it, not a hang") {
  temp_dir d("doppler_io");
  std::string fifo = d / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // More than one 64 KiB piece through the pipe, read in full.
  const std::string text(200000, 'x');
  auto writer = std::async(std::launch::async, [&] { std::ofstream(fifo) << text; });
  CHECK(read_file(fifo) == text);
  writer.get();
  // /dev/zero never ends: read_file stops at its limit (256 MiB by default; 1 MiB here, lighter under ASan).
  try {
    (void)read_file("/dev/zero", std::size_t{1} << 20);
    FAIL("read an endless file");
  } catch (const error& e) {
    CHECK(e.code() == errc::io);
    CHECK(e.file() == "/dev/zero");
    CHECK(std::string(e.what()).find("not a regular file") != std::string::npos);
  }
  CHECK_THROWS_AS(read_file(d.path.string()), error);  // a directory
}
