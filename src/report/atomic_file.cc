#include "report/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <stdexcept>

#include "specs/spec_error.h"

namespace fasop {

namespace fs = std::filesystem;

namespace {

// The temporary files open now, for the signal handler: fixed slots it can read without
// locking or allocating (unlink is async-signal-safe; std::string is not).
constexpr int kSlots = 64;
constexpr size_t kPathBytes = 4096;
char g_temporary[kSlots][kPathBytes];
volatile std::sig_atomic_t g_in_use[kSlots];

std::mutex g_slots_mutex;  // writers on several threads; never taken by the handler

int register_temporary(const std::string& path) {
  if (path.size() >= kPathBytes) return -1;
  std::lock_guard<std::mutex> lock(g_slots_mutex);
  for (int i = 0; i < kSlots; ++i)
    if (!g_in_use[i]) {
      std::memcpy(g_temporary[i], path.c_str(), path.size() + 1);
      g_in_use[i] = 1;
      return i;
    }
  return -1;  // more open at once than slots: that file is only removed by its destructor
}

void unregister_temporary(int slot) {
  if (slot >= 0) g_in_use[slot] = 0;
}

extern "C" void remove_temporaries_and_die(int signal) {
  for (int i = 0; i < kSlots; ++i)
    if (g_in_use[i]) ::unlink(g_temporary[i]);
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

}  // namespace

void remove_temporary_files_on_signals() {
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) {
    // A signal ignored when we started (nohup, a shell's background job) stays ignored.
    if (std::signal(signal, remove_temporaries_and_die) == SIG_IGN) std::signal(signal, SIG_IGN);
  }
}

AtomicFileWriter::AtomicFileWriter(const std::string& path)
    : path_(path), temporary_(path + ".tmp." + std::to_string(::getpid())) {
  fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  if (ec) throw SpecError("cannot create directory '" + target.parent_path().string() + "': " + ec.message());
  slot_ = register_temporary(temporary_);  // before the file exists: a signal between leaves nothing
  out_.open(temporary_, std::ios::binary | std::ios::trunc);
  if (!out_) {
    unregister_temporary(slot_);
    throw SpecError("cannot write '" + temporary_ + "': " + std::strerror(errno));
  }
}

AtomicFileWriter::~AtomicFileWriter() {
  if (committed_) return;
  out_.close();
  std::error_code ec;
  fs::remove(temporary_, ec);
  unregister_temporary(slot_);
}

void AtomicFileWriter::write(const std::string& text) {
  out_ << text;
  if (!out_) throw SpecError("cannot write '" + temporary_ + "': " + std::strerror(errno));
}

void AtomicFileWriter::commit() {
  out_.flush();
  if (!out_) throw SpecError("cannot write '" + temporary_ + "': " + std::strerror(errno));
  out_.close();
  std::error_code ec;
  fs::rename(temporary_, path_, ec);
  if (ec) throw SpecError("cannot rename '" + temporary_ + "' to '" + path_ + "': " + ec.message());
  committed_ = true;
  unregister_temporary(slot_);
}

void write_file_atomically(const std::string& path, const std::string& text) {
  AtomicFileWriter file(path);
  file.write(text);
  file.commit();
}

}  // namespace fasop
