// The intrusive lists of the slow paths, written once (tcmalloc's internal/linked_list.h). A
// list is a pointer to its first node, nullptr when empty; a node holds its own links: `next`,
// and `prev` as well in a doubly linked list. A node on two lists at once names the link of
// the other one. The lock-free lists (atomic heads) are not these.
#pragma once

namespace poolalloc::internal {

// Singly linked lists, through `next` or the link named.

template <class T>
void list_push(T*& head, T& node, T* T::*link = &T::next) {
  node.*link = head;
  head = &node;
}

// The first node, taken off the list; nullptr when it is empty.
template <class T>
T* list_pop(T*& head, T* T::*link = &T::next) {
  T* const node = head;
  if (node != nullptr) head = node->*link;
  return node;
}

// Puts the nodes of `chain`, in their order, in front of the list's.
template <class T>
void list_splice(T*& head, T* chain) {
  if (chain == nullptr) return;
  T* last = chain;
  while (last->next != nullptr) last = last->next;
  last->next = head;
  head = chain;
}

// Calls visit(node) for every node, in order; visit may unlink the node it is given, or link it
// into another list.
template <class T, class Visit>
void list_for_each(T* head, Visit visit) {
  for (T* node = head; node != nullptr;) {
    T* const next = node->next;
    visit(*node);
    node = next;
  }
}

// Doubly linked lists, through `next` and `prev` (nullptr before the first node).

template <class T>
void dlist_push(T*& head, T& node) {
  node.prev = nullptr;
  node.next = head;
  if (head != nullptr) head->prev = &node;
  head = &node;
}

template <class T>
void dlist_unlink(T*& head, T& node) {
  (node.prev != nullptr ? node.prev->next : head) = node.next;
  if (node.next != nullptr) node.next->prev = node.prev;
}

}  // namespace poolalloc::internal
