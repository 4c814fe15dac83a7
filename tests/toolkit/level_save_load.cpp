// A game level saved with its handles and loaded in another run of the program: the example of
// Pool<T>::spawn_at, and the test that saved handles resolve in a new process (two ctest runs of
// this program, `save FILE` then `load FILE`; tests/toolkit/CMakeLists.txt).
//
// The level: squads of soldiers in two pools. A soldier names its squad and its target by handle,
// a squad its leader. `save` plays a few frames (spawns, deaths, a compaction, so that ids and
// slots differ and generations have moved), then writes every object with its packed handle and
// the packed handles it holds. `load` rebuilds both pools with spawn_at, checks that every saved
// handle resolves to the object saved under it and that the level's checksum is the one saved,
// then plays on. It exits with 1, saying why, when anything differs.
#include <poolalloc/object_pool.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

using poolalloc::Growth;
using poolalloc::Handle;
using poolalloc::Pool;

struct Squad;

struct Soldier {
  Soldier(int soldier_hp, Handle<Squad> soldier_squad) : hp(soldier_hp), squad(soldier_squad) {}
  Soldier(Soldier&&) noexcept = default;
  int hp;
  Handle<Squad> squad;
  Handle<Soldier> target;
};

struct Squad {
  explicit Squad(std::string squad_name) : name(std::move(squad_name)) {}
  Squad(Squad&&) noexcept = default;
  std::string name;
  Handle<Soldier> leader;
};

struct Level {
  Pool<Squad> squads{0, Growth::growable};
  Pool<Soldier> soldiers{0, Growth::growable};
};

// What the level holds, as one number: every object's handle, fields and the handles it holds,
// whatever the order of the objects in their pools (a loaded pool puts them elsewhere).
std::uint64_t checksum(const Level& level) {
  std::uint64_t sum = 0;
  std::uint64_t object = 0;
  const auto mix = [&](std::uint64_t value) { object = (object ^ value) * 0x100000001B3u; };
  level.squads.each([&](Handle<Squad> handle, const Squad& squad) {
    object = 0;
    mix(handle.packed());
    for (const char c : squad.name) mix(static_cast<unsigned char>(c));
    mix(squad.leader.packed());
    sum += object;
  });
  level.soldiers.each([&](Handle<Soldier> handle, const Soldier& soldier) {
    object = 1;
    mix(handle.packed());
    mix(static_cast<std::uint64_t>(soldier.hp));
    mix(soldier.squad.packed());
    mix(soldier.target.packed());
    sum += object;
  });
  return sum;
}

// One frame: every soldier hits its target; the dead are despawned; a squad whose leader died
// takes the next soldier that names it; every squad gets `reinforcements` new soldiers, each
// targeting a soldier of another squad.
void play(Level& level, int frame, int reinforcements) {
  level.soldiers.for_each([&](Soldier& soldier) {
    if (Soldier* target = level.soldiers.get(soldier.target)) target->hp -= 7 + frame % 5;
  });
  std::vector<Handle<Soldier>> dead;
  level.soldiers.each([&](Handle<Soldier> handle, const Soldier& soldier) {
    if (soldier.hp <= 0) dead.push_back(handle);
  });
  for (const Handle<Soldier> handle : dead) level.soldiers.despawn(handle);
  level.squads.each([&](Handle<Squad> squad_handle, Squad& squad) {
    if (level.soldiers.get(squad.leader) == nullptr) {
      squad.leader = {};
      level.soldiers.each([&](Handle<Soldier> handle, const Soldier& soldier) {
        if (soldier.squad == squad_handle && squad.leader == Handle<Soldier>())
          squad.leader = handle;
      });
    }
  });
  std::vector<Handle<Soldier>> everyone;
  level.soldiers.each([&](Handle<Soldier> handle, const Soldier&) { everyone.push_back(handle); });
  std::vector<Handle<Squad>> squads;
  level.squads.each([&](Handle<Squad> handle, const Squad&) { squads.push_back(handle); });
  for (std::size_t s = 0; s < squads.size(); ++s) {
    for (int i = 0; i < reinforcements; ++i) {
      Soldier* recruit = level.soldiers.spawn(100, squads[s]);
      if (!everyone.empty()) {
        recruit->target =
            everyone[(s * 31 + static_cast<std::size_t>(i) * 17 + frame) % everyone.size()];
      }
    }
  }
}

int fail(const std::string& why) {
  std::cerr << "level_save_load: " << why << "\n";
  return 1;
}

int save(const char* path) {
  // Made first, the menu's pool takes the first seed: the level's pools get other seeds (other
  // generations) than a new run's first pools.
  Pool<Soldier> menu(4);
  Level level;
  for (const char* name : {"alpha", "bravo", "charlie", "delta"}) (void)level.squads.spawn(name);
  for (int frame = 0; frame < 30; ++frame) play(level, frame, frame < 10 ? 6 : 2);
  std::vector<Soldier*> wounded;  // evacuated before the save: holes that the compaction fills
  level.soldiers.for_each([&](Soldier& soldier) {
    if (soldier.hp < 60) wounded.push_back(&soldier);
  });
  for (Soldier* soldier : wounded) level.soldiers.despawn(soldier);
  const std::size_t moved = level.soldiers.compact();
  std::ofstream out(path);
  level.squads.each([&](Handle<Squad> handle, const Squad& squad) {
    out << "squad " << handle.packed() << ' ' << squad.name << ' ' << squad.leader.packed() << '\n';
  });
  level.soldiers.each([&](Handle<Soldier> handle, const Soldier& soldier) {
    out << "soldier " << handle.packed() << ' ' << soldier.hp << ' ' << soldier.squad.packed()
        << ' ' << soldier.target.packed() << '\n';
  });
  out << "checksum " << checksum(level) << '\n';
  if (!out) return fail(std::string("cannot write ") + path);
  std::cout << "saved " << level.squads.size() << " squads and " << level.soldiers.size()
            << " soldiers (" << moved << " moved by the compaction before saving)\n";
  return moved > 0 ? 0 : fail("the compaction moved nothing: ids and slots would not differ");
}

int load(const char* path) {
  std::ifstream in(path);
  if (!in) return fail(std::string("cannot read ") + path);
  struct SavedSquad {
    std::uint64_t handle;
    std::string name;
    std::uint64_t leader;
  };
  struct SavedSoldier {
    std::uint64_t handle;
    int hp;
    std::uint64_t squad;
    std::uint64_t target;
  };
  std::vector<SavedSquad> saved_squads;
  std::vector<SavedSoldier> saved_soldiers;
  std::uint64_t saved_checksum = 0;
  for (std::string kind; in >> kind;) {
    if (kind == "squad") {
      SavedSquad s;
      in >> s.handle >> s.name >> s.leader;
      saved_squads.push_back(s);
    } else if (kind == "soldier") {
      SavedSoldier s;
      in >> s.handle >> s.hp >> s.squad >> s.target;
      saved_soldiers.push_back(s);
    } else if (kind == "checksum") {
      in >> saved_checksum;
    } else {
      return fail("unknown record " + kind);
    }
  }
  if (saved_squads.empty() || saved_soldiers.empty()) return fail("an empty level");

  // A pool filled by plain spawn() in the saved order resolves none of the saved handles: they
  // name this run's ids and generations only through spawn_at.
  {
    Pool<Soldier> plain(0, Growth::growable);
    for (const SavedSoldier& s : saved_soldiers) (void)plain.spawn(s.hp, Handle<Squad>());
    for (const SavedSoldier& s : saved_soldiers) {
      if (plain.get(Handle<Soldier>::from_packed(s.handle)) != nullptr) {
        return fail("a saved handle resolved in a pool that did not load it");
      }
    }
  }

  Level level;
  (void)level.soldiers.reserve(saved_soldiers.size());
  for (const SavedSquad& s : saved_squads) {
    Squad* squad = level.squads.spawn_at(Handle<Squad>::from_packed(s.handle), s.name);
    if (squad == nullptr) return fail("spawn_at refused squad " + s.name);
    squad->leader = Handle<Soldier>::from_packed(s.leader);
  }
  for (const SavedSoldier& s : saved_soldiers) {
    Soldier* soldier = level.soldiers.spawn_at(Handle<Soldier>::from_packed(s.handle), s.hp,
                                               Handle<Squad>::from_packed(s.squad));
    if (soldier == nullptr) return fail("spawn_at refused a soldier");
    soldier->target = Handle<Soldier>::from_packed(s.target);
  }

  std::size_t references = 0;
  for (const SavedSquad& s : saved_squads) {
    const Squad* squad = level.squads.get(Handle<Squad>::from_packed(s.handle));
    if (squad == nullptr || squad->name != s.name) return fail("squad " + s.name + " is lost");
    if (level.soldiers.get(squad->leader) != nullptr) ++references;
  }
  for (const SavedSoldier& s : saved_soldiers) {
    const Soldier* soldier = level.soldiers.get(Handle<Soldier>::from_packed(s.handle));
    if (soldier == nullptr || soldier->hp != s.hp) return fail("a soldier is lost");
    if (level.squads.get(soldier->squad) == nullptr) return fail("a soldier's squad is lost");
    ++references;
    if (level.soldiers.get(soldier->target) != nullptr) ++references;
  }
  if (checksum(level) != saved_checksum) return fail("the level's checksum differs");
  std::cout << "loaded " << level.squads.size() << " squads and " << level.soldiers.size()
            << " soldiers: every saved handle resolves, " << references
            << " references between them resolve, the checksum is the saved one\n";

  for (int frame = 30; frame < 40; ++frame) play(level, frame, 2);
  std::cout << "played on: " << level.soldiers.size() << " soldiers\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "save") == 0) return save(argv[2]);
  if (argc == 3 && std::strcmp(argv[1], "load") == 0) return load(argv[2]);
  std::fprintf(stderr, "usage: level_save_load save|load FILE\n");
  return 2;
}
