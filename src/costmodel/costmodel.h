#pragma once
// costmodel: pure functions of specs and a candidate plan.
//   make_plan_context  what a layout's cost depends on besides its partition (make_context.h)
//   CostPolicy         the formulas that differ between cost models (cost_policy.h)
//   FasopPolicy        FASOP's formulas, quirks and arithmetic (fasop_policy.h)
//   simulate_1f1b      event simulation of the 1F1B schedule (pipeline_1f1b.h)
//   estimate_plan      a plan's step time, price and memory (estimate.h)
#include "costmodel/cost_policy.h"
#include "costmodel/estimate.h"
#include "costmodel/fasop_policy.h"
#include "costmodel/make_context.h"
#include "costmodel/pipeline_1f1b.h"
#include "costmodel/plan_context.h"
