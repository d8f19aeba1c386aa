#pragma once
// specs: the plain value types fasop-cpp plans with, and the one place they are loaded and
// validated.
//   ModelSpec    a transformer model and its pipeline units (model_spec.h)
//   ClusterSpec  node types with GPUs, links and prices, and the nodes (cluster_spec.h)
//   ProfileSpec  measured forward times per layer type, tp and micro-batch (profile_spec.h)
//   PlanKey/Plan a candidate layout and its layer partition (plan.h)
//   precisions   what a training precision implies for bytes and peaks (precision.h)
//   parse_*      YAML text to a validated spec (spec_loader.h)
//   SpecStore    presets by name, files by path (spec_store.h)
//   SpecError    bad input, with the file, the field and the fix (spec_error.h)
#include "specs/cluster_spec.h"
#include "specs/model_spec.h"
#include "specs/plan.h"
#include "specs/precision.h"
#include "specs/profile_spec.h"
#include "specs/spec_error.h"
#include "specs/spec_loader.h"
#include "specs/spec_store.h"
