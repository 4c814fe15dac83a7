// A particle system built on the toolkit as a game would build it: particles live in a
// Pool<Particle> and die at random times, emitters follow their particle through a Handle, each
// frame's draw list comes from a FrameAllocator, and both allocators report to budgets.
//   particles [FRAMES]   prints the time per frame and the budget table
#include <poolalloc/toolkit.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>

namespace {

struct Particle {
  float position[3];
  float velocity[3];
  float life;  // seconds left
  float size;
};

struct DrawItem {
  float position[3];
  float size;
};

constexpr int kMaxParticles = 20'000;
constexpr int kSpawnsPerFrame = 150;  // about 10,000 alive: particles live 0.2 to 2 s
constexpr float kFrameSeconds = 1.0f / 60;

class ParticleSystem {
 public:
  ParticleSystem()
      : particles_(kMaxParticles),
        frame_(kMaxParticles * sizeof(DrawItem)),
        particle_budget_(particles_, kMaxParticles * sizeof(Particle) * 3 / 4),
        frame_budget_(frame_, 12'000 * sizeof(DrawItem)) {
    particles_.set_name("particles");
    frame_.set_name("draw list");
    particle_budget_.set_name("particles");
    frame_budget_.set_name("draw list");
  }

  void update() {
    for (int i = 0; i < kSpawnsPerFrame; ++i) {
      const float speed = uniform_(random_);
      Particle* p = particle_budget_.spawn(Particle{{0, 0, 0}, {speed, 1, -speed}, 2 * speed, 1});
      if (p != nullptr && i == 0) tracked_ = particles_.handle_of(p);
    }
    // A despawn inside for_each is allowed for the particle being visited.
    particles_.for_each([this](Particle& p) {
      p.life -= kFrameSeconds;
      if (p.life <= 0) {
        particle_budget_.despawn(&p);
        return;
      }
      for (int axis = 0; axis < 3; ++axis) p.position[axis] += p.velocity[axis] * kFrameSeconds;
    });
    if (Particle* followed = particles_.get(tracked_)) camera_target_ = followed->position[0];
  }

  // The frame's draw list, gone at the next reset.
  std::size_t draw() {
    frame_.reset();
    (void)frame_budget_.end_frame();
    auto* items = frame_budget_.allocate(particles_.size() * sizeof(DrawItem), alignof(DrawItem));
    auto* list = static_cast<DrawItem*>(items);
    std::size_t count = 0;
    particles_.for_each([&](const Particle& p) {
      list[count++] = {{p.position[0], p.position[1], p.position[2]}, p.size};
    });
    return count;
  }

  [[nodiscard]] float camera_target() const { return camera_target_; }

 private:
  poolalloc::Pool<Particle> particles_;
  poolalloc::FrameAllocator frame_;
  poolalloc::Tracked<poolalloc::Pool<Particle>> particle_budget_;
  poolalloc::Tracked<poolalloc::FrameAllocator> frame_budget_;
  poolalloc::Handle<Particle> tracked_;
  float camera_target_ = 0;
  std::mt19937 random_{2024};
  std::uniform_real_distribution<float> uniform_{0.1f, 1.0f};
};

}  // namespace

int main(int argc, char** argv) {
  const int frames = argc > 1 ? std::atoi(argv[1]) : 2'000;
  ParticleSystem system;
  std::size_t drawn = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int frame = 0; frame < frames; ++frame) {
    system.update();
    drawn += system.draw();
  }
  const std::chrono::duration<double, std::micro> elapsed =
      std::chrono::steady_clock::now() - start;
  std::printf("particles: %d frames, %.1f particles drawn per frame, %.1f us per frame\n", frames,
              static_cast<double>(drawn) / frames, elapsed.count() / frames);
  poolalloc::print_budgets(std::cout);
  return 0;
}
