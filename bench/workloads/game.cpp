// Workload 6, a game frame loop through global new/delete: every frame spawns particles and
// entities and despawns those whose time is up, builds per-frame temporaries (a scratch vector,
// strings, a map of contacts), and grows a C array of events with realloc from empty.
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

}  // namespace

int main(int argc, char** argv) {
  wl::Args args(argc, argv);
  const long frames = args.get("frames", 50, 1500, 15000);
  const long spawn = args.get("particles", 100, 200, 200);  // spawned per frame (on average)
  const long entities_per_frame = args.get("entities", 8, 8, 8);

  wl::Rng rng(6);
  std::vector<Particle*> particles;
  std::vector<std::unique_ptr<Entity>> entities;
  std::uint64_t checksum = 0;
  for (long frame = 0; frame < frames; ++frame) {
    // Spawn.
    long n = static_cast<long>(rng.below(static_cast<std::uint64_t>(2 * spawn)));
    for (long i = 0; i < n; ++i) {
      auto* p =
          new Particle{static_cast<float>(i),  0, 0, 1, 2, 3, static_cast<int>(10 + rng.below(50)),
                       static_cast<int>(i % 4)};
      particles.push_back(p);
    }
    for (long i = 0; i < entities_per_frame; ++i) {
      auto e = std::make_unique<Entity>();
      e->name = "entity-" + std::to_string(frame) + "-" + std::to_string(i) + "-with-a-long-name";
      e->components.resize(1 + rng.below(24), static_cast<int>(i));
      e->life = static_cast<int>(20 + rng.below(200));
      entities.push_back(std::move(e));
    }

    // Per-frame temporaries: scratch positions, a contact map, a label string.
    std::vector<float> scratch;
    std::unordered_map<int, std::vector<int>> contacts;
    for (std::size_t i = 0; i < particles.size(); i += 7) {
      scratch.push_back(particles[i]->x);
      contacts[static_cast<int>(i % 97)].push_back(static_cast<int>(i));
    }
    std::string label = "frame " + std::to_string(frame) + ": " + std::to_string(particles.size()) +
                        " particles, " + std::to_string(entities.size()) + " entities";
    checksum += label.size() + scratch.size() + contacts.size();

    // Events, in a C array grown with realloc.
    Event* events = nullptr;
    std::size_t count = 0, capacity = 0;

    // Update and despawn particles (swap-remove).
    for (std::size_t i = 0; i < particles.size();) {
      Particle* p = particles[i];
      p->x += p->vx;
      if (--p->life <= 0) {
        if (count == capacity) {
          capacity = capacity ? capacity * 2 : 4;
          events = static_cast<Event*>(std::realloc(events, capacity * sizeof(Event)));
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
    std::free(events);
  }
  for (Particle* p : particles) delete p;
  wl::print_checksum("game", checksum);
}
