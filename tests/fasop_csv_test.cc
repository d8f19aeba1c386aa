// FASOP's table cells: torch's one-element tensors and pandas' quoting, as FASOP's own
// main_logs/*.csv hold them (tests/data/fasop).
#include <catch2/catch.hpp>

#include "report/fasop_csv.h"
#include "test_support.h"

namespace fasop {

// The expected texts are what torch 1.13 prints for torch.tensor([v]).float().
TEST_CASE("torch_tensor_text writes a cell as torch prints a float32 tensor", "[fasop_csv]") {
  CHECK(torch_tensor_text(9.82181) == "tensor([9.8218])");
  CHECK(torch_tensor_text(0.5) == "tensor([0.5000])");
  CHECK(torch_tensor_text(1234.56789) == "tensor([1234.5679])");
  CHECK(torch_tensor_text(10.0) == "tensor([10.])");
  CHECK(torch_tensor_text(0.0) == "tensor([0.])");
  CHECK(torch_tensor_text(0.00012) == "tensor([0.0001])");
  CHECK(torch_tensor_text(1e-5) == "tensor([1.0000e-05])");
  CHECK(torch_tensor_text(123456789.0) == "tensor([1.2346e+08])");  // float32: 123456792, above 1e8
  CHECK(torch_tensor_text(12345678.9) == "tensor([12345679.])");    // float32 rounds it to a whole number
}

TEST_CASE("FASOP's table quotes only cells holding a comma, and --csv-style plain writes numbers", "[fasop_csv]") {
  ClusterSpec cluster;
  NodeType a10;
  a10.name = "g5.24xlarge";
  a10.gpu = "A10";
  cluster.node_types = {a10};
  CandidateResult r;
  r.plan.key.mbs = 4;
  r.plan.key.dp = 16;
  r.plan.key.node_order = {0};
  r.plan.partition = {26};
  r.estimate.memory.oom_gpumem_gib = 9.82181;
  r.estimate.memory.zero_oom_gpumem_gib = 5.74819;
  // FASOP's bert.csv: 4,1,16,1.0,"['g5.24xlarge', ...]",0,4,[26],...,False,tensor([9.8218]),False,tensor([5.7482]),...
  const std::string fasop = fasop_csv_row(cluster, r);
  CHECK(fasop.rfind("4,1,16,1.0,['g5.24xlarge'],1,[26],", 0) == 0);
  CHECK(fasop.find(",False,tensor([9.8218]),False,tensor([5.7482]),") != std::string::npos);
  r.plan.key.node_order = {0, 0};
  r.plan.partition = {14, 12};
  const std::string plain = fasop_csv_row(cluster, r, CsvStyle{false, false});
  CHECK(plain.rfind("4,1,16,1.0,\"['g5.24xlarge', 'g5.24xlarge']\",2,\"[14, 12]\",", 0) == 0);
  CHECK(plain.find(",False,9.82181,False,5.74819,") != std::string::npos);
  // The analytic policy's columns: ZeRO, recomputation, per-stage dp, then cp, ep and the
  // precision (the model's own dtype where the plan keeps it).
  auto ends_with = [](const std::string& text, const std::string& end) {
    return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
  };
  r.plan.key.cp = 2, r.plan.key.ep = 8;
  CHECK(fasop_csv_header(cluster, CsvStyle{true, false, "bf16"}).find(",train_cost,zero_stage,recompute,stage_dp,cp,ep,precision\n") !=
        std::string::npos);
  const std::string dims = fasop_csv_row(cluster, r, CsvStyle{true, false, "bf16"});
  CHECK(ends_with(dims, ",0,none,,2,8,bf16\n"));
  r.plan.key.precision = "fp8";
  const std::string fp8 = fasop_csv_row(cluster, r, CsvStyle{true, false, "bf16"});
  CHECK(ends_with(fp8, ",0,none,,2,8,fp8\n"));
}

}  // namespace fasop
