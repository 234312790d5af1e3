fn main() {
    println!("the example is not written yet");
}
