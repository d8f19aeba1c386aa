#pragma once
// report: what fasop-cpp writes, reading plans and estimates only.
//   fasop_csv               FASOP's result table (fasop_csv.h)
//   best_plans_table, estimate_text, estimate_json   for people and scripts (plan_table.h)
//   write_file_atomically   temporary file and rename: no half-written report (atomic_file.h)
//   format_double           shortest round-trip decimal (number_format.h)
#include "report/atomic_file.h"
#include "report/fasop_csv.h"
#include "report/number_format.h"
#include "report/plan_table.h"
