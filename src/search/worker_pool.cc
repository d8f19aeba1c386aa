#include "search/worker_pool.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace fasop {
namespace {

/// True on a thread while it runs a loop's body: a nested loop then runs serially.
thread_local bool in_loop = false;

/// One loop: its body, the next index to take, and the exception of the lowest index that threw.
struct Loop {
  const std::function<void(size_t)>* body = nullptr;
  size_t count = 0;
  std::atomic<size_t> next{0};
  std::mutex error_mutex;
  size_t error_index = 0;
  std::exception_ptr error;

  void work() {
    in_loop = true;
    for (size_t i = next++; i < count; i = next++) {
      try {
        (*body)(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error || i < error_index) error = std::current_exception(), error_index = i;
      }
    }
    in_loop = false;
  }
};

/// Threads started once, as many as the largest loop has asked for less the caller; each
/// sleeps until a loop wants it.
class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  void run(Loop& loop, int helpers) {
    std::unique_lock<std::mutex> lock(mutex_);
    while (static_cast<int>(threads_.size()) < helpers) {
      const int id = static_cast<int>(threads_.size());
      threads_.emplace_back([this, id] { serve(id); });
    }
    loop_ = &loop;
    helpers_ = helpers;
    busy_ = helpers;
    ++generation_;
    lock.unlock();
    wake_.notify_all();
    loop.work();
    lock.lock();
    done_.wait(lock, [&] { return busy_ == 0; });
    loop_ = nullptr;
  }

 private:
  void serve(int id) {
    unsigned long seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      if (id >= helpers_) continue;
      Loop* loop = loop_;
      lock.unlock();
      loop->work();
      lock.lock();
      if (--busy_ == 0) done_.notify_one();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;
  Loop* loop_ = nullptr;
  int helpers_ = 0, busy_ = 0;
  unsigned long generation_ = 0;
  bool stopping_ = false;
};

/// One loop at a time runs on the pool; a second caller (another thread's) waits its turn.
std::mutex pool_turn;

}  // namespace

int available_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

void parallel_for(size_t count, int threads, const std::function<void(size_t)>& body) {
  Loop loop;
  loop.body = &body;
  loop.count = count;
  const int helpers = static_cast<int>(std::min<size_t>(count, std::max(threads, 1))) - 1;
  if (helpers <= 0 || in_loop) {
    const bool outer = in_loop;
    loop.work();
    in_loop = outer;
  } else {
    static Pool pool;
    std::lock_guard<std::mutex> turn(pool_turn);
    pool.run(loop, helpers);
  }
  if (loop.error) std::rethrow_exception(loop.error);
}

}  // namespace fasop
