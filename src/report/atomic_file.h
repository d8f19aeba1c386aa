#pragma once
#include <fstream>
#include <string>

namespace fasop {

/// A file written in pieces through a temporary file in the same directory; it appears under
/// its name only on commit(), so a failed run never leaves a half-written report. Creates
/// missing directories. Throws SpecError naming the path on failure (where to write is the
/// user's to fix).
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(const std::string& path);
  ~AtomicFileWriter();  ///< removes the temporary file unless committed
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const std::string& text);
  /// Flushes and renames the temporary file to the path.
  void commit();
  const std::string& path() const { return path_; }

 private:
  std::string path_, temporary_;
  std::ofstream out_;
  bool committed_ = false;
  int slot_ = -1;  ///< its place among the temporary files a signal removes
};

/// Installs handlers for SIGINT, SIGTERM and SIGHUP that remove every AtomicFileWriter's
/// temporary file still open, then die of the signal as without them (exit 130, 143, 129). A
/// signal ignored at start (nohup, a background job) stays ignored.
void remove_temporary_files_on_signals();

/// Writes `text` to `path` at once, the same way.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace fasop
