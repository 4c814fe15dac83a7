// Workload 6, a game frame loop through global new/delete: every frame spawns particles and
// entities and despawns those whose time is up, builds per-frame temporaries (a scratch vector,
// strings, a map of contacts), and grows a C array of events with realloc from empty.
// --tags=1 runs each of the four (particles, entities, the frame's temporaries, events) under a
// memory tag of its own where the allocator is poolalloc: what tags cost a program that uses
// several (docs/benchmarks.md, "The heap profile and memory tags"). Under other allocators, and
// on Windows, the flag changes nothing.
#ifndef _WIN32
#include <dlfcn.h>
#endif

#include <cstdlib>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common.hpp"

namespace {

struct Particle {
  float x, y, z, vx, vy, vz;
  int life;
  int kind;
};

struct Entity {
  std::string name;
  std::vector<int> components;
  int life;
};

struct Event {
  int frame, entity, kind, value;
};

// One of poolalloc's tag calls, looked up at run time so that the workload runs under any
// allocator; none on Windows, where a program exports no functions to look up.
template <typename Function>
Function tag_call([[maybe_unused]] const char* name) {
#ifdef _WIN32
  return nullptr;
#else
  return reinterpret_cast<Function>(dlsym(RTLD_DEFAULT, name));
#endif
}

class Tags {
 public:
  enum Subsystem { kParticles, kEntities, kTemporaries, kEvents };

  explicit Tags(bool on) {
    auto* register_tag = tag_call<int (*)(const char*)>("poolalloc_tag_register");
    push_ = tag_call<int (*)(int)>("poolalloc_tag_push");
    pop_ = tag_call<int (*)()>("poolalloc_tag_pop");
    if (!on || !register_tag || !push_ || !pop_) {
      push_ = nullptr;
      return;
    }
    const char* names[] = {"particles", "entities", "temporaries", "events"};
    for (int i = 0; i < 4; ++i) ids_[i] = register_tag(names[i]);
  }
  void push(Subsystem subsystem) const {
    if (push_) push_(ids_[subsystem]);
  }
  void pop() const {
    if (push_) pop_();
  }

 private:
  int (*push_)(int) = nullptr;
  int (*pop_)() = nullptr;
  int ids_[4] = {};
};

}  // namespace

int main(int argc, char** argv) {
  wl::Args args(argc, argv);
  const long frames = args.get("frames", 50, 1500, 15000);
  const long spawn = args.get("particles", 100, 200, 200);  // spawned per frame (on average)
  const long entities_per_frame = args.get("entities", 8, 8, 8);
  const Tags tags(args.get("tags", 0, 0, 0) != 0);

  wl::Rng rng(6);
  std::vector<Particle*> particles;
  std::vector<std::unique_ptr<Entity>> entities;
  std::uint64_t checksum = 0;
  for (long frame = 0; frame < frames; ++frame) {
    // Spawn.
    tags.push(Tags::kParticles);
    long n = static_cast<long>(rng.below(static_cast<std::uint64_t>(2 * spawn)));
    for (long i = 0; i < n; ++i) {
      auto* p =
          new Particle{static_cast<float>(i),  0, 0, 1, 2, 3, static_cast<int>(10 + rng.below(50)),
                       static_cast<int>(i % 4)};
      particles.push_back(p);
    }
    tags.pop();
    tags.push(Tags::kEntities);
    for (long i = 0; i < entities_per_frame; ++i) {
      auto e = std::make_unique<Entity>();
      e->name = "entity-" + std::to_string(frame) + "-" + std::to_string(i) + "-with-a-long-name";
      e->components.resize(1 + rng.below(24), static_cast<int>(i));
      e->life = static_cast<int>(20 + rng.below(200));
      entities.push_back(std::move(e));
    }
    tags.pop();

    // Per-frame temporaries: scratch positions, a contact map, a label string.
    tags.push(Tags::kTemporaries);
    std::vector<float> scratch;
    std::unordered_map<int, std::vector<int>> contacts;
    for (std::size_t i = 0; i < particles.size(); i += 7) {
      scratch.push_back(particles[i]->x);
      contacts[static_cast<int>(i % 97)].push_back(static_cast<int>(i));
    }
    std::string label = "frame " + std::to_string(frame) + ": " + std::to_string(particles.size()) +
                        " particles, " + std::to_string(entities.size()) + " entities";
    checksum += label.size() + scratch.size() + contacts.size();
    tags.pop();

    // Events, in a C array grown with realloc.
    tags.push(Tags::kEvents);
    Event* events = nullptr;
    std::size_t count = 0, capacity = 0;

    // Update and despawn particles (swap-remove).
    for (std::size_t i = 0; i < particles.size();) {
      Particle* p = particles[i];
      p->x += p->vx;
      if (--p->life <= 0) {
        if (count == capacity) {
          capacity = capacity ? capacity * 2 : 4;
          events = static_cast<Event*>(wl::realloc(events, capacity * sizeof(Event)));
          if (!events) return 1;
        }
        events[count++] =
            Event{static_cast<int>(frame), static_cast<int>(i), p->kind, static_cast<int>(p->x)};
        delete p;
        particles[i] = particles.back();
        particles.pop_back();
      } else {
        ++i;
      }
    }
    tags.pop();
    for (std::size_t i = 0; i < entities.size();) {
      if (--entities[i]->life <= 0) {
        checksum += entities[i]->name.size() + entities[i]->components.size();
        entities[i] = std::move(entities.back());
        entities.pop_back();
      } else {
        ++i;
      }
    }
    for (std::size_t i = 0; i < count; ++i)
      checksum += static_cast<std::uint64_t>(events[i].kind + events[i].value);
    wl::free(events);
  }
  for (Particle* p : particles) delete p;
  wl::print_checksum("game", checksum);
}
