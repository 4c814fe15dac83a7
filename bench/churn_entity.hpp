// The entity of the toolkit's churn (churn.hpp), apart from the benchmark library, so that
// tests/toolkit/pool_churn_pairs.cpp counts the instructions of the same loop: 64 bytes, built
// field by field.
#pragma once

#include <cstdint>

namespace churn_workload {

struct Entity {
  explicit Entity(std::uint32_t entity_id) : id(entity_id) {}
  float position[3] = {};
  float velocity[3] = {1, 0, 0};
  float orientation[4] = {0, 0, 0, 1};
  float health = 100;
  std::uint32_t id;
  std::uint32_t flags = 0;
  std::uint32_t parent = 0;
  std::uint32_t components[2] = {};
};
static_assert(sizeof(Entity) == 64);

}  // namespace churn_workload
