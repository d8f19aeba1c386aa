#include "report/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace fasop {

namespace fs = std::filesystem;

AtomicFileWriter::AtomicFileWriter(const std::string& path)
    : path_(path), temporary_(path + ".tmp." + std::to_string(::getpid())) {
  fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  if (ec) throw std::runtime_error("cannot create directory '" + target.parent_path().string() + "': " + ec.message());
  out_.open(temporary_, std::ios::binary | std::ios::trunc);
  if (!out_) throw std::runtime_error("cannot write '" + temporary_ + "': " + std::strerror(errno));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (committed_) return;
  out_.close();
  std::error_code ec;
  fs::remove(temporary_, ec);
}

void AtomicFileWriter::write(const std::string& text) {
  out_ << text;
  if (!out_) throw std::runtime_error("cannot write '" + temporary_ + "': " + std::strerror(errno));
}

void AtomicFileWriter::commit() {
  out_.flush();
  if (!out_) throw std::runtime_error("cannot write '" + temporary_ + "': " + std::strerror(errno));
  out_.close();
  std::error_code ec;
  fs::rename(temporary_, path_, ec);
  if (ec) throw std::runtime_error("cannot rename '" + temporary_ + "' to '" + path_ + "': " + ec.message());
  committed_ = true;
}

void write_file_atomically(const std::string& path, const std::string& text) {
  AtomicFileWriter file(path);
  file.write(text);
  file.commit();
}

}  // namespace fasop
