#include "report/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace fasop {

void write_file_atomically(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  if (ec) throw std::runtime_error("cannot create directory '" + target.parent_path().string() + "': " + ec.message());
  std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write '" + temporary + "': " + std::strerror(errno));
    out << text;
    out.flush();
    if (!out) {
      fs::remove(temporary, ec);
      throw std::runtime_error("cannot write '" + temporary + "': " + std::strerror(errno));
    }
  }
  fs::rename(temporary, target, ec);
  if (ec) {
    fs::remove(temporary);
    throw std::runtime_error("cannot rename '" + temporary + "' to '" + path + "': " + ec.message());
  }
}

}  // namespace fasop
