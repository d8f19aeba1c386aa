#include "costmodel/pipeline_1f1b.h"

#include <algorithm>
#include <cmath>

namespace fasop {
namespace {

/// Event times of every stage and micro-batch; unset events read as 0, as in FASOP.
class Timeline {
 public:
  // The buffer is reused by the thread's next simulation: the search runs millions.
  Timeline(int stages, int microbatches) : m_(microbatches) {
    std::vector<double>& storage = buffer();
    const size_t size = size_t(stages) * m_ * 8;
    if (storage.size() < size) storage.resize(size);
    std::fill_n(storage.data(), size, 0.0);
    data_ = storage.data();
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
  double* data_;
};

/// One run of the schedule: the stages' timings, and the events as they are decided.
class Simulation {
 public:
  /// `skip_periodic`: run() may jump over steady rounds once they repeat (see
  /// skip_periodic_rounds); events() then misses theirs.
  Simulation(const std::vector<StageTiming>& stages, int m, bool skip_periodic)
      : stages_(stages), pp_(static_cast<int>(stages.size())), m_(m), skip_periodic_(skip_periodic), warmup_{pp_, m},
        t_(pp_, m) {}

  /// The run's boxes (call after run()).
  std::vector<PipelineEvent> events() {
    using Kind = PipelineEvent::Kind;
    std::vector<PipelineEvent> events;
    for (int s = 0; s < pp_; ++s) {
      const StageTiming& st = stages_[s];
      std::vector<PipelineEvent> stage;
      for (int j = 0; j < m_; ++j) {
        stage.push_back({Kind::kForward, s, j, t_.forward_end(s, j) - st.forward_s, t_.forward_end(s, j)});
        stage.push_back({Kind::kBackward, s, j, t_.backward_end(s, j) - st.backward_s, t_.backward_end(s, j)});
        if (s + 1 < pp_)
          stage.push_back({Kind::kForwardSend, s, j, t_.forward_send_end(s, j) - st.forward_send_s, t_.forward_send_end(s, j)});
        if (s > 0)
          stage.push_back({Kind::kBackwardSend, s, j, t_.backward_send_end(s, j) - st.backward_send_s,
                           t_.backward_send_end(s, j)});
      }
      std::stable_sort(stage.begin(), stage.end(),
                       [](const PipelineEvent& a, const PipelineEvent& b) { return a.start_s < b.start_s; });
      events.insert(events.end(), stage.begin(), stage.end());
    }
    return events;
  }

  PipelineResult run() {
    // FASOP's loops visit every (stage, micro-batch) and skip the inactive ones; these visit
    // the active ones only, in the same order. warmup_[s] = min(pp-s-1, m) falls with s.
    for (int j = 0; j < m_; ++j)
      for (int s = 0; s < pp_ && j < warmup_[s]; ++s) warm_up_forward(s, j);
    for (int j = 0; j < m_; ++j) {
      int first = pp_;  // stages [first, pp) run steady round j: warmup_[s] <= m-1-j
      while (first > 0 && warmup_[first - 1] <= m_ - 1 - j) --first;
      for (int s = first; s < pp_; ++s) steady_forward(s, j);
      for (int s = pp_ - 1; s >= first; --s) steady_backward(s, j);
      if (skip_periodic_) j = skip_periodic_rounds(j);
    }
    for (int j = 0; j < m_; ++j) {
      int last = -1;  // stages [0, last] drain backward j: warmup_[s] >= m-j
      while (last + 1 < pp_ && warmup_[last + 1] >= m_ - j) ++last;
      for (int s = last; s >= 0; --s) cool_down_backward(s, j);
    }
    PipelineResult result;
    result.pipeline_s = t_.backward_end(0, m_ - 1);
    for (int s = 0; s < pp_; ++s) result.stage_end_s.push_back(t_.backward_end(s, m_ - 1));
    return result;
  }

 private:
  /// Calls visit(event at round a, the same event at round b) for every event that a steady
  /// round in which every stage is active writes. Round a + 1 reads only round a's (and events
  /// it writes itself, or that are never written and read as 0).
  template <typename Visit>
  void for_each_round_event(int a, int b, Visit visit) {
    for (int s = 0; s < pp_; ++s) {
      const int ka = a + warmup_[s], kb = b + warmup_[s];
      visit(t_.forward_end(s, ka), t_.forward_end(s, kb));
      visit(t_.backward_end(s, a), t_.backward_end(s, b));
      if (s + 1 < pp_) {
        visit(t_.forward_send_end(s, ka), t_.forward_send_end(s, kb));
        visit(t_.forward_recv_end(s + 1, ka), t_.forward_recv_end(s + 1, kb));
        visit(t_.backward_recv_posted(s, a), t_.backward_recv_posted(s, b));
      }
      if (s > 0) {
        visit(t_.backward_send_end(s, a), t_.backward_send_end(s, b));
        visit(t_.backward_recv_end(s - 1, a), t_.backward_recv_end(s - 1, b));
        visit(t_.forward_recv_posted(s, ka + 1), t_.forward_recv_posted(s, kb + 1));
      }
    }
  }

  /// A steady round in which every stage is active maps the events of the round before by max
  /// and + only, so once round j is round j - 1 shifted by one period (every event later by the
  /// same time), every later such round is too. The rounds up to the last but one such round
  /// are then skipped: that round is written as round j shifted (the rounds between stay unset,
  /// nothing after reads them) and the simulation goes on from there. Returns the last round
  /// done. Shifts count as equal within 1e-12 of the times, a rounding error's size, so the
  /// jump moves the result by no more than about that share of the step.
  int skip_periodic_rounds(int j) {
    const int last_full = m_ - pp_;    // the last round with every stage active (warmup_[0] = pp - 1)
    const int target = last_full - 1;  // round last_full also posts stage 0's next receive: simulated
    // The transient lasts about pp rounds; past a few times that, rounds are no longer checked.
    if (j < 2 || j + 2 > target || j > 8 * pp_ + 8) return j;
    const double period = t_.backward_end(0, j) - t_.backward_end(0, j - 1);
    if (!(period > 0)) return j;
    bool periodic = true;
    for_each_round_event(j, j - 1, [&](double now, double before) {
      periodic = periodic && std::abs(now - before - period) <= 1e-12 * std::max(std::abs(now), period);
    });
    if (!periodic) return j;
    const double shift_s = (target - j) * period;
    for_each_round_event(target, j, [&](double& at_target, double at_j) { at_target = at_j + shift_s; });
    return target;
  }

  /// Stage s sends micro-batch j's activations once `ready`.
  void send_forward(int s, int j, double ready) {
    t_.forward_send_end(s, j) = ready + stages_[s].forward_send_s;
    t_.forward_recv_end(s + 1, j) = t_.forward_send_end(s, j);
  }
  /// Stage s sends micro-batch j's gradients once its backward ended and the receive is posted.
  void send_backward(int s, int j) {
    double ready = std::max(t_.backward_end(s, j), t_.backward_recv_posted(s - 1, j));
    t_.backward_send_end(s, j) = ready + stages_[s].backward_send_s;
    t_.backward_recv_end(s - 1, j) = t_.backward_send_end(s, j);
  }

  /// Warm-up: stage s runs forwards 0 .. warmup[s]-1.
  void warm_up_forward(int s, int j) {
    if (j >= warmup_[s]) return;
    double start;
    if (s == 0) start = j == 0 ? 0.0 : t_.forward_send_end(s, j - 1);
    else if (j == 0) start = t_.forward_recv_end(s, j);
    else start = std::max(t_.forward_send_end(s, j - 1), t_.forward_recv_end(s, j));
    double end = t_.forward_end(s, j) = start + stages_[s].forward_s;
    if (s > 0 && j < warmup_[s] - 1) t_.forward_recv_posted(s, j + 1) = end;
    if (s < pp_ - 1) send_forward(s, j, j == 0 ? end : std::max(end, t_.forward_recv_posted(s + 1, j)));
  }

  /// Steady state, round j: stage s runs forward j + warmup[s] ...
  void steady_forward(int s, int j) {
    int k = j + warmup_[s];
    if (k > m_ - 1) return;
    double start;
    if (j == 0) {
      double previous_send = warmup_[s] > 0 ? t_.forward_send_end(s, k - 1) : 0.0;
      start = std::max(previous_send, t_.forward_recv_end(s, k));
    } else if (s == 0) {
      start = t_.backward_end(s, j - 1);
    } else {
      start = std::max(t_.backward_send_end(s, j - 1), t_.forward_recv_end(s, k));
    }
    double end = t_.forward_end(s, k) = start + stages_[s].forward_s;
    if (s < pp_ - 1) {
      t_.backward_recv_posted(s, j) = end;
      double posted = (j == 0 && warmup_[s] == 0) ? 0.0 : t_.forward_recv_posted(s + 1, k);
      send_forward(s, k, std::max(end, posted));
    }
  }

  /// ... then backward j.
  void steady_backward(int s, int j) {
    if (j > m_ - warmup_[s] - 1) return;
    int k = j + warmup_[s];
    double previous_send = s > 0 ? t_.forward_send_end(s, k) : 0.0;
    double start = std::max({previous_send, t_.backward_recv_end(s, j), t_.forward_end(s, k)});
    double end = t_.backward_end(s, j) = start + stages_[s].backward_s;
    if (s > 0) {
      if (k + 1 < m_) t_.forward_recv_posted(s, k + 1) = end;
      else if (j + 1 < m_) t_.backward_recv_posted(s, j + 1) = end;
      send_backward(s, j);
    } else if (j == m_ - 1 - warmup_[s] && j + 1 < m_) {
      t_.backward_recv_posted(s, j + 1) = end;
    }
  }

  /// Cool-down: stage s runs its last warmup[s] backwards.
  void cool_down_backward(int s, int j) {
    if (j < m_ - warmup_[s]) return;
    double start = std::max({t_.backward_end(s, j - 1), t_.backward_recv_end(s, j), t_.backward_send_end(s, j - 1)});
    double end = t_.backward_end(s, j) = start + stages_[s].backward_s;
    if (j < m_ - 1) t_.backward_recv_posted(s, j + 1) = end;
    if (s > 0) send_backward(s, j);
  }

  const std::vector<StageTiming>& stages_;
  int pp_, m_;
  bool skip_periodic_;
  /// Warm-up forwards of each stage: min(pp-s-1, m).
  struct Warmup {
    int pp, m;
    int operator[](int s) const { return std::min(pp - s - 1, m); }
  } warmup_;
  Timeline t_;
};

}  // namespace

PipelineResult simulate_1f1b(const std::vector<StageTiming>& stages, int m) {
  if (stages.size() == 1) {
    double seconds = m * (stages[0].forward_s + stages[0].backward_s);
    return {seconds, {seconds}};
  }
  return Simulation(stages, m, /*skip_periodic=*/true).run();
}

std::vector<PipelineEvent> simulate_1f1b_events(const std::vector<StageTiming>& stages, int m) {
  if (stages.size() == 1) {  // one stage: forward and backward of each micro-batch in turn
    std::vector<PipelineEvent> events;
    double t = 0;
    for (int j = 0; j < m; ++j) {
      events.push_back({PipelineEvent::Kind::kForward, 0, j, t, t + stages[0].forward_s});
      t += stages[0].forward_s;
      events.push_back({PipelineEvent::Kind::kBackward, 0, j, t, t + stages[0].backward_s});
      t += stages[0].backward_s;
    }
    return events;
  }
  Simulation simulation(stages, m, /*skip_periodic=*/false);
  simulation.run();
  return simulation.events();
}

double pipeline_1f1b_lower_bound(const std::vector<StageTiming>& stages, int m) {
  const int pp = static_cast<int>(stages.size());
  // Chain "stage k works all": micro-batch 0 reaches stage k, k runs its m forwards and m
  // backwards, the last micro-batch's gradients return to stage 0 (sends on the way).
  double before = 0, bound = 0, total = 0, busiest = 0;
  for (int k = 0; k < pp; ++k) {
    const StageTiming& t = stages[k];
    bound = std::max(bound, before + m * (t.forward_s + t.backward_s));
    before += t.forward_s + t.backward_s + t.forward_send_s + (k + 1 < pp ? stages[k + 1].backward_send_s : 0);
    total += t.forward_s + t.backward_s;
    // Chains through every stage once (sends left out, which keeps them valid whatever the
    // sends): stage k's m forwards, then the last micro-batch to the end and back; or
    // micro-batch 0 to the end and back to k, then k's remaining m-1-warmup forwards and m-1
    // backwards.
    const int warmup = std::min(pp - k - 1, m);
    busiest = std::max({busiest, (m - 1) * t.forward_s,
                        (m - 1) * t.backward_s + std::max(0, m - 1 - warmup) * t.forward_s});
  }
  return std::max(bound, total + busiest);
}

}  // namespace fasop
