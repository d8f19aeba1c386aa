#include "costmodel/pipeline_1f1b.h"

#include <algorithm>

namespace fasop {
namespace {

/// Event times of every stage and micro-batch; unset events read as 0, as in FASOP.
class Timeline {
 public:
  // The buffer is reused by the thread's next simulation: the search runs millions.
  Timeline(int stages, int microbatches) : m_(microbatches), data_(buffer()) {
    data_.assign(size_t(stages) * m_ * 8, 0.0);
  }
  // An index of -1 reads the last micro-batch's slot (FASOP indexes Python lists).
  double& forward_end(int s, int j) { return at(0, s, j); }
  double& forward_send_end(int s, int j) { return at(1, s, j); }
  double& forward_recv_posted(int s, int j) { return at(2, s, j); }
  double& forward_recv_end(int s, int j) { return at(3, s, j); }
  double& backward_end(int s, int j) { return at(4, s, j); }
  double& backward_send_end(int s, int j) { return at(5, s, j); }
  double& backward_recv_posted(int s, int j) { return at(6, s, j); }
  double& backward_recv_end(int s, int j) { return at(7, s, j); }

 private:
  double& at(int event, int s, int j) {
    if (j < 0) j += m_;
    return data_[(size_t(s) * 8 + event) * m_ + j];
  }
  static std::vector<double>& buffer() {
    static thread_local std::vector<double> storage;
    return storage;
  }
  int m_;
  std::vector<double>& data_;
};

}  // namespace

PipelineResult simulate_1f1b(const std::vector<StageTiming>& stages, int m) {
  const int pp = static_cast<int>(stages.size());
  PipelineResult result;
  if (pp == 1) {
    result.pipeline_s = m * (stages[0].forward_s + stages[0].backward_s);
    result.stage_end_s = {result.pipeline_s};
    return result;
  }
  std::vector<int> warmup(pp);
  for (int s = 0; s < pp; ++s) warmup[s] = std::min(pp - s - 1, m);
  Timeline t(pp, m);

  // Send from stage s of micro-batch j's activations, once its forward has ended.
  auto send_forward = [&](int s, int j, double ready) {
    t.forward_send_end(s, j) = ready + stages[s].forward_send_s;
    t.forward_recv_end(s + 1, j) = t.forward_send_end(s, j);
  };
  auto send_backward = [&](int s, int j) {
    double ready = std::max(t.backward_end(s, j), t.backward_recv_posted(s - 1, j));
    t.backward_send_end(s, j) = ready + stages[s].backward_send_s;
    t.backward_recv_end(s - 1, j) = t.backward_send_end(s, j);
  };

  // Warm-up: stage s runs forwards 0 .. warmup[s]-1.
  for (int j = 0; j < m; ++j) {
    for (int s = 0; s < pp; ++s) {
      if (j >= warmup[s]) continue;
      double start;
      if (s == 0) start = j == 0 ? 0.0 : t.forward_send_end(s, j - 1);
      else if (j == 0) start = t.forward_recv_end(s, j);
      else start = std::max(t.forward_send_end(s, j - 1), t.forward_recv_end(s, j));
      double end = t.forward_end(s, j) = start + stages[s].forward_s;
      if (s > 0 && j < warmup[s] - 1) t.forward_recv_posted(s, j + 1) = end;
      if (s < pp - 1) send_forward(s, j, j == 0 ? end : std::max(end, t.forward_recv_posted(s + 1, j)));
    }
  }

  // Steady state: in round j, stage s runs forward j+warmup[s], then backward j.
  for (int j = 0; j < m; ++j) {
    for (int s = 0; s < pp; ++s) {
      int k = j + warmup[s];
      if (k > m - 1) continue;
      double start;
      if (j == 0) {
        double previous_send = warmup[s] > 0 ? t.forward_send_end(s, k - 1) : 0.0;
        start = std::max(previous_send, t.forward_recv_end(s, k));
      } else if (s == 0) {
        start = t.backward_end(s, j - 1);
      } else {
        start = std::max(t.backward_send_end(s, j - 1), t.forward_recv_end(s, k));
      }
      double end = t.forward_end(s, k) = start + stages[s].forward_s;
      if (s < pp - 1) {
        t.backward_recv_posted(s, j) = end;
        double posted = (j == 0 && warmup[s] == 0) ? 0.0 : t.forward_recv_posted(s + 1, k);
        send_forward(s, k, std::max(end, posted));
      }
    }
    for (int s = pp - 1; s >= 0; --s) {
      if (j > m - warmup[s] - 1) continue;
      int k = j + warmup[s];
      double previous_send = s > 0 ? t.forward_send_end(s, k) : 0.0;
      double start = std::max({previous_send, t.backward_recv_end(s, j), t.forward_end(s, k)});
      double end = t.backward_end(s, j) = start + stages[s].backward_s;
      if (s > 0) {
        if (k + 1 < m) t.forward_recv_posted(s, k + 1) = end;
        else if (j + 1 < m) t.backward_recv_posted(s, j + 1) = end;
        send_backward(s, j);
      } else if (j == m - 1 - warmup[s] && j + 1 < m) {
        t.backward_recv_posted(s, j + 1) = end;
      }
    }
  }

  // Cool-down: stage s runs its last warmup[s] backwards.
  for (int j = 0; j < m; ++j) {
    for (int s = pp - 1; s >= 0; --s) {
      if (j < m - warmup[s]) continue;
      double start = std::max({t.backward_end(s, j - 1), t.backward_recv_end(s, j),
                               t.backward_send_end(s, j - 1)});
      double end = t.backward_end(s, j) = start + stages[s].backward_s;
      if (j < m - 1) t.backward_recv_posted(s, j + 1) = end;
      if (s > 0) send_backward(s, j);
    }
  }

  result.pipeline_s = t.backward_end(0, m - 1);
  for (int s = 0; s < pp; ++s) result.stage_end_s.push_back(t.backward_end(s, m - 1));
  return result;
}

}  // namespace fasop
